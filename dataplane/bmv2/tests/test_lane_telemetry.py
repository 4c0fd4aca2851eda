"""slicing.p4's egress delay telemetry (lane_telemetry.p4) run by the bundled engine: the
sojourn egress sees is dequeue time - enqueue time (v1model's deq_timedelta, us), and the
program's five halving tests put it in the bucket of its highest set bit, as the driver's
``telemetry.bucket_of`` reads it; its nibble counts add up to the exact sum and max. p4c's
program, packets through the Python module."""

from __future__ import annotations

import sys
from pathlib import Path

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bmv2_target.engine import COMPILED_JSON, Engine  # noqa: E402

from sliceportal_p4rt.telemetry import DELAY_BUCKETS, MAX_LANES, NIBBLE_CELLS, bucket_of, nibble_total  # noqa: E402

FRAME = bytes.fromhex("0200000000020200000000010800") + bytes(46)  # not IPv4: slice 0, lane 0
SOJOURNS = [
    0,
    1,
    2,
    3,
    4,
    5,
    7,
    8,
    15,
    16,
    255,
    256,
    1000,
    65_535,
    65_536,
    1 << 20,
    (1 << 31) - 1,
    1 << 31,
    (1 << 32) - 1,
]


def test_bucket_of_is_the_highest_set_bit() -> None:
    assert [bucket_of(d) for d in (0, 1, 2, 3, 4, 7, 8, 1023, 1024)] == [0, 0, 1, 1, 2, 2, 3, 9, 10]
    assert bucket_of((1 << 32) - 1) == 31 and bucket_of(1 << 40) == DELAY_BUCKETS - 1


def test_egress_counts_each_sojourn_in_its_log2_bucket_with_sum_and_max() -> None:
    e = Engine(COMPILED_JSON.read_text())
    t = {name[0]: i for i, name in enumerate(e.tables())}
    pt, fw = t["SlicingIngress.tenant.port_tenant"], t["SlicingIngress.fwd.tenant_forward"]
    e.insert(pt, [(1, 511)], 0, e.action_of(pt, "SlicingIngress.tenant.set_access_tenant"), [7, 100])
    e.insert(fw, [(7, 255), (1, 511)], 0, e.action_of(fw, "SlicingIngress.fwd.forward"), [4])
    e.commit()
    hist = e.counter_index("SlicingEgress.telemetry.delay_hist")
    tx = e.counter_index("SlicingEgress.telemetry.slice_lane_tx")
    rx = e.counter_index("SlicingIngress.classifier.slice_lane_rx")
    sums = e.counter_index("SlicingEgress.telemetry.delay_sum_nibbles")
    rises = e.counter_index("SlicingEgress.telemetry.delay_max_nibbles")
    largest = e.register_index("SlicingEgress.telemetry.delay_max")
    enqueued = 10_000_000_000  # us: a clock far from 0, as the live ports' wall clock
    for i, sojourn in enumerate(SOJOURNS):
        pkt = e.ingress(FRAME, 1, enqueued + i)
        assert pkt is not None
        assert e.egress(pkt, enqueued + i + sojourn) is not None
        cells = e.counter_cells(hist)[:DELAY_BUCKETS]  # slice 0, lane 0: cells 0..31
        assert cells[bucket_of(sojourn)][0] == sum(1 for d in SOJOURNS[: i + 1] if bucket_of(d) == bucket_of(sojourn))
    buckets = [p for p, _ in e.counter_cells(hist)[:DELAY_BUCKETS]]
    assert buckets == [sum(1 for d in SOJOURNS if bucket_of(d) == b) for b in range(DELAY_BUCKETS)]
    assert sum(buckets) == len(SOJOURNS) == e.counter_cells(tx)[0][0] == e.counter_cells(rx)[0][0]
    # the sum and the max in nibble counts (what P4Runtime can read from BMv2), exactly
    assert nibble_total([p for p, _ in e.counter_cells(sums)[:NIBBLE_CELLS]]) == sum(SOJOURNS)
    # four nibbles each, eight for the sojourns of 2^16 us or more
    assert sum(p for p, _ in e.counter_cells(sums)[:NIBBLE_CELLS]) == sum(8 if d >> 16 else 4 for d in SOJOURNS)
    assert nibble_total([p for p, _ in e.counter_cells(rises)[:NIBBLE_CELLS]]) == max(SOJOURNS)
    assert e.register_cells(largest)[0] == max(SOJOURNS)
    assert sum(p for p, _ in e.counter_cells(hist)[DELAY_BUCKETS:]) == 0  # no other slice lane
    assert len(e.counter_cells(tx)) == 256 * MAX_LANES
