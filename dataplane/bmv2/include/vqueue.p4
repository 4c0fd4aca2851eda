// Per-slice admission (seed 004 §IV): a virtual queue per slice (Listing 1
// queue_manage: rate as per-packet transmission time, tail drop above the burst limit
// C_DELAY, ECN step marking above M_DELAY), or a trTCM meter for comparison.
//
// Units: the switch clock is ingress_global_timestamp (microseconds on BMv2), turned into
// ns; a packet's transmission time is packet_length * byte_time >> 10 ns, so the rate
// needs no division in the data plane (p4c's BMv2 backend has none for variables).
#ifndef SLICING_VQUEUE_P4
#define SLICING_VQUEUE_P4

#include "headers.p4"
#include "size.p4"

control VirtualQueue(inout headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    // Listing 1's slice_ts: time of the slice's previous packet, ns (0 = none yet).
    register<bit<64>>(MAX_SLICES) slice_ts;
    // Listing 1's slice_delay: the virtual queue's backlog expressed as delay, ns.
    register<bit<32>>(MAX_SLICES) slice_delay;
    // Largest backlog seen since the register was last written by the controller, ns.
    register<bit<32>>(MAX_SLICES) slice_delay_max;
    meter(MAX_SLICES, MeterType.bytes) slice_meter;
    counter(MAX_SLICES, CounterType.packets) slice_drops;
    counter(MAX_SLICES, CounterType.packets) slice_ecn_marks;
    // The same two per slice x lane (index meta.slice_lane), for the KPI collector (#25).
    counter(SLICE_LANES, CounterType.packets) slice_lane_drops;
    counter(SLICE_LANES, CounterType.packets) slice_lane_ecn_marks;

    action queue_manage(bit<32> byte_time, bit<32> c_delay, bit<32> m_delay) {
        meta.qm.byte_time = byte_time;
        meta.qm.c_delay = c_delay;
        meta.qm.m_delay = m_delay;
    }

    action meter_police() {
        slice_meter.execute_meter<bit<2>>((bit<32>)meta.slice_id, meta.color);
    }

    table slice_qos {
        key = {
            meta.slice_id: exact @name("slice_id");
        }
        actions = {
            queue_manage;
            meter_police;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = MAX_SLICES;
    }

    apply {
        bit<32> idx = (bit<32>)meta.slice_id;
        switch (slice_qos.apply().action_run) {
            queue_manage: {
                bit<64> now = (bit<64>)standard_metadata.ingress_global_timestamp * 1000;
                bit<64> prev;
                bit<32> backlog;
                bit<32> backlog_max;
                // BMv2 runs ingress in one thread; targets with parallel ingress need
                // these read-modify-writes in @atomic blocks (seed 004 §IV-D).
                slice_ts.read(prev, idx);
                slice_ts.write(idx, now);
                bit<64> delta = 0;
                if (prev != 0 && prev <= now) {
                    delta = now - prev;
                }
                slice_delay.read(backlog, idx);
                bit<64> delay = (bit<64>)backlog;
                if (delta > delay) {
                    delay = 0;
                } else {
                    delay = delay - delta;
                }
                bit<64> t_delay = ((bit<64>)standard_metadata.packet_length
                                   * (bit<64>)meta.qm.byte_time) >> 10;
                if (delay + t_delay > (bit<64>)meta.qm.c_delay) {
                    meta.drop = 1;
                    slice_drops.count(idx);
                    slice_lane_drops.count(meta.slice_lane);
                } else {
                    delay = delay + t_delay;
                }
                slice_delay.write(idx, (bit<32>)delay);
                slice_delay_max.read(backlog_max, idx);
                if ((bit<32>)delay > backlog_max) {
                    slice_delay_max.write(idx, (bit<32>)delay);
                }
                if (meta.drop == 0 && delay > (bit<64>)meta.qm.m_delay) {
                    meta.ecn_mark = 1;
                }
            }
            meter_police: {
                if (meta.color == METER_RED) {
                    meta.drop = 1;
                    slice_drops.count(idx);
                    slice_lane_drops.count(meta.slice_lane);
                }
            }
        }
        // Only ECN-capable transport is marked (Listing 1: ecn != 0), on the innermost
        // IPv4 header; headers with options are left alone (their checksum is not
        // recomputed).
        if (meta.ecn_mark == 1) {
            if (hdr.ue_ipv4.isValid()) {
                if (hdr.ue_ipv4.ecn != 0 && hdr.ue_ipv4.ihl == 5) {
                    hdr.ue_ipv4.ecn = ECN_CE;
                    slice_ecn_marks.count(idx);
                    slice_lane_ecn_marks.count(meta.slice_lane);
                }
            } else if (hdr.inner_ipv4.isValid()) {
                if (hdr.inner_ipv4.ecn != 0 && hdr.inner_ipv4.ihl == 5) {
                    hdr.inner_ipv4.ecn = ECN_CE;
                    slice_ecn_marks.count(idx);
                    slice_lane_ecn_marks.count(meta.slice_lane);
                }
            } else if (hdr.ipv4.isValid()) {
                if (hdr.ipv4.ecn != 0 && hdr.ipv4.ihl == 5) {
                    hdr.ipv4.ecn = ECN_CE;
                    slice_ecn_marks.count(idx);
                    slice_lane_ecn_marks.count(meta.slice_lane);
                }
            }
        }
    }
}

#endif
