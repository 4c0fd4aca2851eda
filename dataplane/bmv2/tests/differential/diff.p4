/* The program of the generated differential tests (test_generated.py): one table per match
 * kind and one that mixes them, actions that rewrite fields and choose the egress port,
 * program and runtime default actions, a direct counter, an indirect counter and a meter
 * indexed by header fields, and a register read-modify-written per packet. Everything a
 * table, meter or register decides is written into the packet, so that the frames the two
 * switches emit reveal it. An egress table stamps or drops by egress port. */
#include <core.p4>
#include <v1model.p4>

const bit<16> TYPE_PROBE = 0x88B5;

header ethernet_t {
    bit<48> dst;
    bit<48> src;
    bit<16> ether_type;
}

/* The test's header: keys, indices, and what the pipeline writes back. */
header probe_t {
    bit<32> seq;       // the test's own number for the frame; no action writes it
    bit<8>  kind;      // 0: through the tables; 1: a marker, straight to port `k_exact`
    bit<16> k_exact;
    bit<16> k_tern;
    bit<32> k_lpm;
    bit<16> k_range;
    bit<8>  k_opt;
    bit<8>  c_index;   // the indirect counter's cell
    bit<8>  m_index;   // the meter's cell
    bit<8>  color;     // written: the packet meter's color
    bit<8>  bcolor;    // written: the byte meter's color (the same cell)
    bit<32> seen;      // written: packets seen so far on the ingress port (the register)
    bit<64> trace;     // written: each table pushes its entry's tag
    bit<16> eport;     // written in egress: the egress port (^ an egress entry's stamp)
    bit<8>  flags;     // written: hit / miss / action run of some tables
    bit<8>  dcolor;    // written: the direct meter's color (t_dmeter's entry, on a hit)
}

struct headers_t {
    ethernet_t ethernet;
    probe_t    probe;
}

struct meta_t {
    bit<8> color;
    bit<8> bcolor;
    bit<8> dcolor;
}

parser DiffParser(packet_in pkt, out headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    state start {
        pkt.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            TYPE_PROBE: parse_probe;
            default: accept;
        }
    }
    state parse_probe {
        pkt.extract(hdr.probe);
        transition accept;
    }
}

control DiffVerify(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control DiffIngress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    direct_counter(CounterType.packets_and_bytes) exact_hits;
    counter(256, CounterType.packets_and_bytes) by_index;
    meter(256, MeterType.packets) policer;
    meter(256, MeterType.bytes) byte_policer;
    register<bit<32>>(512) seen_on_port;
    direct_meter<bit<8>>(MeterType.packets) entry_policer;
    direct_counter(CounterType.packets_and_bytes) profile_hits;  // of an indirect table
    // members shared by entries; groups of members, one chosen per packet by a hash of
    // the selector fields (as BMv2 computes it), the member at hash % group size
    action_profile(32w64) members;
    action_selector(HashAlgorithm.crc16, 32w64, 32w16) groups;
    action_selector(HashAlgorithm.crc32, 32w64, 32w32) groups32;
    action_selector(HashAlgorithm.identity, 32w64, 32w32) rounds;  // by seq: seq % size
    action_selector(HashAlgorithm.crc16, 32w16, 32w16) ecmp;  // its table: selector keys only

    action fwd(bit<9> port, bit<8> tag) {
        sm.egress_spec = port;
        hdr.probe.trace = (hdr.probe.trace << 8) | (bit<64>) tag;
    }
    action set_src(bit<48> mac, bit<8> tag) {
        hdr.ethernet.src = mac;
        hdr.probe.trace = (hdr.probe.trace << 8) | (bit<64>) tag;
    }
    action drop(bit<8> tag) {
        mark_to_drop(sm);
        hdr.probe.trace = (hdr.probe.trace << 8) | (bit<64>) tag;
    }

    action metered(bit<8> tag) {
        entry_policer.read(meta.dcolor);
        hdr.probe.trace = (hdr.probe.trace << 8) | (bit<64>) tag;
    }

    table t_exact {
        key = {
            hdr.probe.k_exact: exact;
            sm.ingress_port: exact;
        }
        actions = { fwd; set_src; drop; NoAction; }
        counters = exact_hits;
        default_action = fwd(1, 0xF1);
        size = 64;
    }
    table t_ternary {
        key = {
            hdr.probe.k_tern: ternary;
            hdr.ethernet.dst: ternary;
        }
        actions = { fwd; set_src; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table t_lpm {
        key = { hdr.probe.k_lpm: lpm; }
        actions = { fwd; set_src; drop; NoAction; }
        default_action = set_src(0x02000000F3F3, 0xF3);
        size = 64;
    }
    table t_range {
        key = { hdr.probe.k_range: range; }
        actions = { fwd; set_src; drop; NoAction; }
        default_action = NoAction();
        size = 8;  // fewer than the generator may insert: a full table refuses the rest
    }
    table t_optional {
        key = {
            hdr.probe.k_opt: optional;
            sm.ingress_port: optional;
        }
        actions = { fwd; set_src; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table t_mixed {
        key = {
            hdr.probe.k_opt: exact;
            hdr.probe.k_lpm: lpm;
            hdr.probe.k_tern: ternary;
            hdr.probe.k_range: range;
        }
        actions = { fwd; set_src; drop; NoAction; }
        default_action = NoAction();
        size = 64;
    }
    table t_profile {
        key = { hdr.probe.k_exact: exact; }
        actions = { fwd; set_src; drop; NoAction; }
        implementation = members;
        counters = profile_hits;
        size = 32;
    }
    table t_select {
        key = {
            hdr.probe.k_opt: ternary;
            hdr.ethernet.src: selector;
            hdr.probe.k_tern: selector;
        }
        actions = { fwd; set_src; drop; NoAction; }
        implementation = groups;
        size = 32;
    }
    table t_select32 {
        key = {
            hdr.probe.k_exact: ternary;
            hdr.ethernet.dst: selector;
            hdr.probe.seq: selector;
        }
        actions = { fwd; set_src; drop; NoAction; }
        implementation = groups32;
        size = 32;
    }
    table t_rounds {
        key = {
            hdr.probe.k_range: exact;
            hdr.probe.k_lpm: selector;
            hdr.probe.seq: selector;
        }
        actions = { fwd; set_src; drop; NoAction; }
        implementation = rounds;
        size = 32;
    }
    table t_ecmp {  // no match key: one entry (with an empty key) takes every packet
        key = {
            hdr.probe.k_lpm: selector;
            hdr.probe.c_index: selector;
        }
        actions = { fwd; set_src; drop; NoAction; }
        implementation = ecmp;
        size = 4;
    }
    table t_dmeter {
        key = { hdr.probe.k_opt: exact; }
        actions = { metered; NoAction; }
        meters = entry_policer;
        default_action = NoAction();
        size = 32;
    }

    apply {
        if (!hdr.probe.isValid()) {
            mark_to_drop(sm);  // not the test's frame
        } else if (hdr.probe.kind == 1) {
            // a marker: straight out, with the register's cell of its ingress port read (the
            // simple_switch_grpc P4Runtime server does not read registers: frames show them)
            sm.egress_spec = (bit<9>) hdr.probe.k_exact;
            seen_on_port.read(hdr.probe.seen, (bit<32>) sm.ingress_port);
        } else {
            t_exact.apply();
            t_ternary.apply();
            if (t_lpm.apply().hit) {
                hdr.probe.flags = hdr.probe.flags | 1;
            }
            switch (t_range.apply().action_run) {
                fwd: { hdr.probe.flags = hdr.probe.flags | 2; }
                drop: { hdr.probe.flags = hdr.probe.flags | 4; }
                default: { hdr.probe.flags = hdr.probe.flags | 8; }
            }
            if (t_optional.apply().miss) {
                hdr.probe.flags = hdr.probe.flags | 16;
            }
            t_mixed.apply();
            t_profile.apply();
            if (t_select.apply().hit) {
                hdr.probe.flags = hdr.probe.flags | 32;
            }
            t_select32.apply();
            t_rounds.apply();
            t_ecmp.apply();
            t_dmeter.apply();
            hdr.probe.dcolor = meta.dcolor;
            by_index.count((bit<32>) hdr.probe.c_index);
            policer.execute_meter((bit<32>) hdr.probe.m_index, meta.color);
            hdr.probe.color = meta.color;
            byte_policer.execute_meter((bit<32>) hdr.probe.m_index, meta.bcolor);
            hdr.probe.bcolor = meta.bcolor;
            bit<32> seen;
            seen_on_port.read(seen, (bit<32>) sm.ingress_port);
            seen = seen + 1;
            seen_on_port.write((bit<32>) sm.ingress_port, seen);
            hdr.probe.seen = seen;
        }
    }
}

control DiffEgress(inout headers_t hdr, inout meta_t meta, inout standard_metadata_t sm) {
    action stamp(bit<16> v) {
        hdr.probe.eport = hdr.probe.eport ^ v;
    }
    action drop_late() {
        mark_to_drop(sm);
    }
    table t_egress {
        key = {
            sm.egress_port: exact;
            hdr.probe.k_opt: ternary;
        }
        actions = { stamp; drop_late; NoAction; }
        default_action = NoAction();
        size = 16;
    }
    apply {
        if (hdr.probe.isValid() && hdr.probe.kind == 0) {
            hdr.probe.eport = (bit<16>) sm.egress_port;
            t_egress.apply();
        }
    }
}

control DiffCompute(inout headers_t hdr, inout meta_t meta) {
    apply { }
}

control DiffDeparser(packet_out pkt, in headers_t hdr) {
    apply {
        pkt.emit(hdr.ethernet);
        pkt.emit(hdr.probe);
    }
}

V1Switch(DiffParser(), DiffVerify(), DiffIngress(), DiffEgress(), DiffCompute(), DiffDeparser()) main;
