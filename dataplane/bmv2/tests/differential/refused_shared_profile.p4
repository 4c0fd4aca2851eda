/* Two tables sharing an action profile: simple_switch_grpc loads it, the bundled target refuses
 * it (BMv2 keeps one copy of each action per profile, the last table's, and looks its next
 * node up in the other table, which throws unless that table branches on hit / miss) at
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
    action_profile(16) shared;

    action fwd(bit<9> port) {
        sm.egress_spec = port;
    }
    table t {
        key = {
            hdr.ethernet.dst: exact;
        }
        actions = { fwd; NoAction; }
        implementation = shared;
        size = 16;
    }
    table u {
        key = {
            hdr.ethernet.src: exact;
        }
        actions = { fwd; NoAction; }
        implementation = shared;
        size = 16;
    }
    apply {
        t.apply();
        u.apply();
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
