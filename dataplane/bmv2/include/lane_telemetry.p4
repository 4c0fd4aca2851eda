// Per slice x lane egress telemetry (#25): what left each lane's queue, and how long it
// waited there. v1model's standard_metadata.deq_timedelta is the packet's sojourn in the
// traffic manager, in microseconds (BMv2: dequeue time - enqueue time). A controller
// reads count, sum, max and a log2 histogram per slice lane and derives an interval's
// mean and percentiles from two reads (sliceportal.kpi.delay).
//
// Everything is exported in counters: BMv2's P4Runtime server (PI) answers register reads
// UNIMPLEMENTED, so a register can keep state inside the pipeline but cannot report it.
// A sum is counted in pieces instead: each packet counts, for each of its sojourn's 8
// nibbles (those of value 0 above the fourth may be skipped), the cell of that nibble's
// position j and value v, and
//     sum = sum over j, v of cells[j][v] * v * 16^j
// exactly. The max is kept in a register (inside the pipeline) and each time it rises,
// the rise is counted the same way, so the rises add up to the max.
//
// Cells are indexed by meta.slice_lane (slice_id * MAX_LANES + lane, set by the
// classifier): the histogram's cell of bucket b is slice_lane * DELAY_BUCKETS + b, the
// nibble cell of position j and value v is slice_lane * 128 + j * 16 + v. Bucket b counts
// sojourns in [2^b, 2^(b+1)) us, bucket 0 also 0 us: b is the highest set bit.
#ifndef SLICING_LANE_TELEMETRY_P4
#define SLICING_LANE_TELEMETRY_P4

#include "headers.p4"
#include "size.p4"

control LaneTelemetry(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    counter(SLICE_LANES, CounterType.packets_and_bytes) slice_lane_tx;
    counter(SLICE_LANES * DELAY_BUCKETS, CounterType.packets) delay_hist;
    counter(SLICE_LANES * DELAY_NIBBLE_CELLS, CounterType.packets) delay_sum_nibbles;
    counter(SLICE_LANES * DELAY_NIBBLE_CELLS, CounterType.packets) delay_max_nibbles;
    // The largest sojourn so far, us: state for the comparison only (see above).
    register<bit<32>>(SLICE_LANES) delay_max;

    bit<32> rise = 0;

    // One action, so that BMv2 holds the register's lock across its read-modify-write:
    // simple_switch runs several egress threads, and one slice lane may leave through
    // ports that different threads serve.
    action track_max(bit<32> cell, bit<32> sojourn) {
        bit<32> largest;
        delay_max.read(largest, cell);
        rise = sojourn > largest ? sojourn - largest : 0;
        delay_max.write(cell, sojourn > largest ? sojourn : largest);
    }

    // The low four nibbles always, the high four only when one of them is set: a nibble of
    // value 0 adds nothing to the sum (and its cells are never read), and sojourns under
    // 65 ms then cost four counts instead of eight.
    action count_sum_low(bit<32> base, bit<32> v) {
        delay_sum_nibbles.count(base | (v & 0xf));
        delay_sum_nibbles.count(base | 0x10 | ((v >> 4) & 0xf));
        delay_sum_nibbles.count(base | 0x20 | ((v >> 8) & 0xf));
        delay_sum_nibbles.count(base | 0x30 | ((v >> 12) & 0xf));
    }

    action count_sum_high(bit<32> base, bit<32> v) {
        delay_sum_nibbles.count(base | 0x40 | ((v >> 16) & 0xf));
        delay_sum_nibbles.count(base | 0x50 | ((v >> 20) & 0xf));
        delay_sum_nibbles.count(base | 0x60 | ((v >> 24) & 0xf));
        delay_sum_nibbles.count(base | 0x70 | ((v >> 28) & 0xf));
    }

    action count_rise(bit<32> base, bit<32> v) {
        delay_max_nibbles.count(base | (v & 0xf));
        delay_max_nibbles.count(base | 0x10 | ((v >> 4) & 0xf));
        delay_max_nibbles.count(base | 0x20 | ((v >> 8) & 0xf));
        delay_max_nibbles.count(base | 0x30 | ((v >> 12) & 0xf));
        delay_max_nibbles.count(base | 0x40 | ((v >> 16) & 0xf));
        delay_max_nibbles.count(base | 0x50 | ((v >> 20) & 0xf));
        delay_max_nibbles.count(base | 0x60 | ((v >> 24) & 0xf));
        delay_max_nibbles.count(base | 0x70 | ((v >> 28) & 0xf));
    }

    apply {
        bit<32> sojourn = standard_metadata.deq_timedelta;
        // Highest set bit by halving (5 tests a packet instead of up to 32).
        bit<32> rest = sojourn;
        bit<32> bucket = 0;
        if (rest[31:16] != 0) {
            bucket = bucket + 16;
            rest = rest >> 16;
        }
        if (rest[15:8] != 0) {
            bucket = bucket + 8;
            rest = rest >> 8;
        }
        if (rest[7:4] != 0) {
            bucket = bucket + 4;
            rest = rest >> 4;
        }
        if (rest[3:2] != 0) {
            bucket = bucket + 2;
            rest = rest >> 2;
        }
        if (rest[1:1] != 0) {
            bucket = bucket + 1;
        }
        slice_lane_tx.count(meta.slice_lane);
        delay_hist.count((meta.slice_lane << DELAY_BUCKET_BITS) | bucket);
        bit<32> base = meta.slice_lane << DELAY_NIBBLE_BITS;
        count_sum_low(base, sojourn);
        if (sojourn[31:16] != 0) {
            count_sum_high(base, sojourn);
        }
        track_max(meta.slice_lane, sojourn);
        if (rise != 0) {
            count_rise(base, rise);
        }
    }
}

#endif
