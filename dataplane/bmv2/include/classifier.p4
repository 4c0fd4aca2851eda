// Table slicing (seed 002 §4.2): one ternary classifier, entries per tenant, giving the
// slice id (DP_SID, seed 004) and the strict-priority lane. A miss follows seed 000
// Algorithm 1 (lane from the innermost DSCP) or a fixed lane, set as default action.
#ifndef SLICING_CLASSIFIER_P4
#define SLICING_CLASSIFIER_P4

#include "headers.p4"
#include "size.p4"

control Classifier(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    // Hits per entry; BMv2 counts a direct counter on every hit by itself.
    direct_counter(CounterType.packets_and_bytes) classifier_hits;
    // Indexed by DP_SID; cell 0 counts classifier misses.
    counter(MAX_SLICES, CounterType.packets_and_bytes) slice_rx;
    // What entered each slice x lane (index meta.slice_lane; slice 0 = misses, per lane).
    counter(SLICE_LANES, CounterType.packets_and_bytes) slice_lane_rx;
    // Packets the parser could not take apart (truncated): counted, still forwarded.
    counter(1, CounterType.packets) malformed;

    action set_slice(slice_id_t slice_id, bit<3> lane) {
        meta.slice_id = slice_id;
        standard_metadata.priority = lane;
    }

    // lane = DSCP bits 2:0 folded onto the switch's queues: shift = log2(8 / lanes).
    action miss_algorithm1(bit<3> lane_shift) {
        meta.slice_id = 0;
        standard_metadata.priority = meta.key.dscp[2:0] >> lane_shift;
    }

    action miss_fixed(bit<3> lane) {
        meta.slice_id = 0;
        standard_metadata.priority = lane;
    }

    table classifier {
        key = {
            meta.tenant_id: exact @name("tenant_id");
            meta.key.has_vni: ternary @name("has_vni");
            meta.key.vni: ternary @name("vni");
            meta.key.has_teid: ternary @name("has_teid");
            meta.key.teid: ternary @name("teid");
            meta.key.src_ip: ternary @name("src_ip");
            meta.key.dst_ip: ternary @name("dst_ip");
            meta.key.dst_port: ternary @name("dst_port");
            meta.key.dscp: ternary @name("dscp");
            meta.key.has_vlan: ternary @name("has_vlan");
            meta.key.vlan: ternary @name("vlan");
        }
        actions = {
            set_slice;
            @defaultonly miss_algorithm1;
            @defaultonly miss_fixed;
        }
        default_action = miss_fixed(0);
        counters = classifier_hits;
        size = CLASSIFIER_TABLE_SIZE;
    }

    apply {
        if (standard_metadata.parser_error != error.NoError) {
            malformed.count(0);
        }
        // malformed or not IPv4 user plane: never classified (docs/packets.md §3)
        if (meta.key.has_ip == 1 && meta.unparsed == 0 && standard_metadata.parser_error == error.NoError) {
            classifier.apply();
        }
        slice_rx.count((bit<32>)meta.slice_id);
        meta.slice_lane = ((bit<32>)meta.slice_id << LANE_BITS) | (bit<32>)standard_metadata.priority;
        slice_lane_rx.count(meta.slice_lane);
    }
}

#endif
