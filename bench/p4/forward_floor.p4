// The interpreter's floor for bench/p4_engine_cost.py: parse Ethernet, forward every frame
// to port 2, deparse. What the engine costs a packet for any program at all.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst_addr;
    bit<48> src_addr;
    bit<16> ether_type;
}

struct headers_t {
    ethernet_t ethernet;
}

struct metadata_t {
}

parser FloorParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    state start {
        packet.extract(hdr.ethernet);
        transition accept;
    }
}

control FloorVerify(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FloorIngress(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    apply {
        standard_metadata.egress_spec = 2;
    }
}

control FloorEgress(inout headers_t hdr, inout metadata_t meta,
                    inout standard_metadata_t standard_metadata) {
    apply { }
}

control FloorCompute(inout headers_t hdr, inout metadata_t meta) {
    apply { }
}

control FloorDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
    }
}

V1Switch(FloorParser(), FloorVerify(), FloorIngress(), FloorEgress(), FloorCompute(), FloorDeparser()) main;
