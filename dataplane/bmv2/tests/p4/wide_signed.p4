// Fields wider than 64 bits and signed int<N> through the operators p4c leaves to the
// target at run time (issue #30): the bundled target's engine against simple_switch.
// The header carries the operands; the ingress writes results into it by `op`.
#include <core.p4>
#include <v1model.p4>

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> type;
}

header w_t {
    bit<8>   op;
    bit<128> a;
    bit<128> b;
    bit<200> c;
    int<16>  sa;
    int<16>  sb;
    bit<128> r1;
    bit<128> r2;
    bit<200> r3;
    int<16>  s1;
    bit<16>  s2;
    bit<8>   flags;
}

struct headers_t {
    ethernet_t eth;
    w_t        w;
}

struct meta_t {
    bit<128> m;
}

parser P(packet_in pk, out headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    state start {
        pk.extract(h.eth);
        pk.extract(h.w);
        m.m = h.w.b ^ 128w0xff;
        transition select(h.w.b) {
            128w0: zero_b;
            0xffffffffffffffffffffffffffffffff: ones_b;
            default: accept;
        }
    }
    state zero_b {
        h.w.flags = 8w0x80;
        transition accept;
    }
    state ones_b {
        h.w.flags = 8w0x40;
        transition accept;
    }
}

control VC(inout headers_t h, inout meta_t m) { apply { } }

control I(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) {
    apply {
        sm.egress_spec = 1;
        bit<8> f = h.w.flags;
        if (h.w.a < h.w.b) { f = f | 1; }
        if (h.w.a > h.w.b) { f = f | 2; }
        if (h.w.c >= (bit<200>)h.w.a) { f = f | 4; }
        if (h.w.sa < h.w.sb) { f = f | 8; }
        if (h.w.sa > 0) { f = f | 16; }
        if (m.m == h.w.a) { f = f | 32; }
        h.w.flags = f;
        if (h.w.op == 1) {
            h.w.r1 = h.w.a + h.w.b;
            h.w.r2 = h.w.a - h.w.b;
            h.w.r3 = h.w.c + (bit<200>)h.w.a;
            h.w.s1 = h.w.sa + h.w.sb;
            h.w.s2 = (bit<16>)(h.w.sa - h.w.sb);
        } else if (h.w.op == 2) {
            h.w.r1 = h.w.a * h.w.b;
            h.w.r2 = h.w.a >> 100;
            h.w.r3 = h.w.c << 77;
            h.w.s1 = h.w.sa |+| h.w.sb;
            h.w.s2 = (bit<16>)(h.w.sa |-| h.w.sb);
        } else if (h.w.op == 3) {
            h.w.r1 = h.w.a |+| h.w.b;
            h.w.r2 = h.w.a |-| h.w.b;
            h.w.r3 = h.w.c >> 150;
            h.w.s1 = h.w.sa >> 3;
            h.w.s2 = (bit<16>)(h.w.sa << 2);
        } else if (h.w.op == 4) {
            h.w.r1 = (bit<128>)(h.w.c >> 64);
            h.w.r2 = ~h.w.a & (h.w.b | 128w0xf0f0);
            h.w.r3 = (bit<200>)h.w.b * (bit<200>)h.w.a;
            h.w.s1 = -h.w.sa;
            h.w.s2 = (bit<16>)h.w.a[127:112] + h.w.b[15:0];
        } else if (h.w.op == 5) {
            h.w.r1 = h.w.a ++ h.w.b[7:0] == 136w0 ? h.w.b : h.w.a;
            h.w.r2 = (bit<128>)(int<128>)h.w.sa;
            h.w.r3 = (bit<200>)(h.w.a ++ 72w0x123456789abcdef012);
            h.w.s1 = (int<16>)h.w.a[15:0];
            h.w.s2 = (bit<16>)(h.w.sa * h.w.sb);
        }
    }
}

control E(inout headers_t h, inout meta_t m, inout standard_metadata_t sm) { apply { } }

control CC(inout headers_t h, inout meta_t m) { apply { } }

control D(packet_out pk, in headers_t h) {
    apply {
        pk.emit(h.eth);
        pk.emit(h.w);
    }
}

V1Switch(P(), VC(), I(), E(), CC(), D()) main;
