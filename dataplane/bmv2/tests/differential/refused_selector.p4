/* A table with an action selector hashing by xor16: simple_switch_grpc runs it, the bundled
 * target (which computes crc16, crc32 and identity selector hashes) refuses it at
 * load (test_generated.py::test_refused_at_load_by_name). */
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct meta_t {
    bit<8> color;
}

parser P(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition accept;
    }
}

control V(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control I(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action_selector(HashAlgorithm.xor16, 16, 14) group;

    action fwd(bit<9> port) {
        sm.egress_spec = port;
    }
    table t {
        key = {
            hdr.ethernet.dst: exact;
            hdr.ethernet.src: selector;
        }
        actions = { fwd; NoAction; }
        implementation = group;
        size = 16;
    }
    apply {
        t.apply();
    }
}

control E(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    apply { }
}

control C(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control D(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
    }
}

V1Switch(P(), V(), I(), E(), C(), D()) main;
