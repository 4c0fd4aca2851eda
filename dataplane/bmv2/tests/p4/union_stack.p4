// A stack of header unions filled by the parser (BMv2's union_stack extract): the first
// byte of each element says which member follows; a third element overflows the stack of
// two (StackOutOfBounds). The ingress reports the parser error and the validity bits.
#include <core.p4>
#include <v1model.p4>

header ethernet_t { bit<48> dst; bit<48> src; bit<16> type; }
header tag_t { bit<8> kind; }
header one_t { bit<8> d; }
header two_t { bit<16> d; }
header report_t { bit<32> err; bit<8> valid; }
header_union U { one_t one; two_t two; }

struct headers_t {
    ethernet_t eth;
    report_t   report;
    tag_t[3]   tag;
    U[2]       u;
}
struct meta_t { }

parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pk.extract(h.eth);
        pk.extract(h.report);
        transition next_tag;
    }
    state next_tag {
        pk.extract(h.tag.next);
        transition select(h.tag.last.kind) {
            1: one;
            2: two;
            default: accept;
        }
    }
    state one {
        pk.extract(h.u.next.one);
        transition next_tag;
    }
    state two {
        pk.extract(h.u.next.two);
        transition next_tag;
    }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        if (sm.parser_error == error.StackOutOfBounds) { h.report.err = 1; }
        else if (sm.parser_error == error.PacketTooShort) { h.report.err = 2; }
        else if (sm.parser_error != error.NoError) { h.report.err = 3; }
        bit<8> v = 0;
        if (h.u[0].one.isValid()) { v = v | 1; }
        if (h.u[0].two.isValid()) { v = v | 2; }
        if (h.u[1].one.isValid()) { v = v | 4; }
        if (h.u[1].two.isValid()) { v = v | 8; }
        h.report.valid = v;
        if (h.u[1].two.isValid()) { h.u[1].two.d = h.u[1].two.d + 1; }
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }
control CC(inout headers_t h, inout meta_t m) { apply { } }

control D(packet_out pk, in headers_t h) {
    apply {
        pk.emit(h.eth);
        pk.emit(h.report);
        pk.emit(h.tag);
        pk.emit(h.u);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
