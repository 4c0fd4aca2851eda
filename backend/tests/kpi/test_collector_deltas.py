"""The KPI collector's arithmetic: counter deltas, restarts, wrap-arounds, delay percentiles."""

from __future__ import annotations

import math
from datetime import UTC, datetime

import pytest
from hypothesis import given
from hypothesis import strategies as st

from sliceportal.drivers.contract import DELAY_BUCKETS, Counters, DelayHistogram, LaneCounters
from sliceportal.kpi.collector import CounterReset, counter_delta, interval_deltas, lane_delta, point_of
from sliceportal.kpi.delay import DelayDelta, bucket_bounds, delay_delta, delay_stats, percentile

TOP64 = 1 << 64
# one portal slice (ref 7) whose catalogue lanes 0 and 2 map to target lanes 1 and 3 of IR slice 1
IR = {
    "slices": [{"slice_id": 1, "ref": 7}],
    "rules": [{"action": {"slice_id": 1, "lane": 1}}, {"action": {"slice_id": 1, "lane": 3}}],
}
EXPLANATION = {"slices": [{"ref": 7, "lane_map": [[0, 1], [2, 3]]}]}
NOW = datetime(2026, 11, 27, tzinfo=UTC)


def hist(buckets: dict[int, int], unit_ns: int = 1000, total: int | None = None, mx: int = 0) -> DelayHistogram:
    b = [0] * DELAY_BUCKETS
    for i, n in buckets.items():
        b[i] = n
    s = total if total is not None else sum(n * bucket_bounds(i)[0] for i, n in buckets.items())
    return DelayHistogram(unit_ns=unit_ns, count=sum(b), sum=s, max=mx, buckets=tuple(b))


@given(st.integers(0, TOP64 - 1), st.integers(0, 1 << 40))
def test_a_counter_that_moves_forward_or_wraps_gives_the_packets_between(before: int, step: int) -> None:
    now = (before + step) % TOP64
    if now >= before or (before >= TOP64 >> 1 and step < TOP64 >> 2):
        assert counter_delta(now, before) == step


@given(st.integers(1, (1 << 62) - 1), st.integers(0, 1 << 40))
def test_a_counter_that_goes_backwards_below_the_top_half_is_a_restart(before: int, now: int) -> None:
    if now < before:
        with pytest.raises(CounterReset):
            counter_delta(now, before)


def test_32_bit_counters_wrap_at_32_bits() -> None:
    assert counter_delta(5, (1 << 32) - 10, bits=32) == 15
    with pytest.raises(CounterReset):
        counter_delta(5, 1000, bits=32)


def test_lane_delta_and_the_sample_it_makes() -> None:
    before = LaneCounters(
        packets=100, bytes=100_000, drops={"queue": 1}, ecn_marks=2, tx_packets=99, tx_bytes=99_000, delay=hist({3: 10})
    )
    now = LaneCounters(
        packets=1100,
        bytes=1_100_000,
        drops={"queue": 11, "policer": 5},
        ecn_marks=4,
        tx_packets=1084,
        tx_bytes=1_084_000,
        delay=hist({3: 10, 4: 985}),
    )
    d = lane_delta(now, before)
    assert (d.packets, d.bytes, d.tx_packets, d.tx_bytes, d.drops, d.ecn_marks) == (
        1000,
        1_000_000,
        985,
        985_000,
        {"queue": 10, "policer": 5},
        2,
    )
    p = point_of((7, 0), 3, d, NOW, 0.5)
    assert p is not None and p.source == "counters"
    assert p.throughput_bps == 985_000 * 8 / 0.5  # what left the lane
    assert p.loss_pct == pytest.approx(1.5)  # 15 dropped of 1000 entered
    assert p.delay_p99_ms is not None and 0.016 <= p.delay_p99_ms <= 0.032  # bucket 4: 16..32 us


def test_without_egress_counts_throughput_is_what_entered_and_delay_is_not_measured() -> None:
    d = lane_delta(LaneCounters(packets=10, bytes=10_000, drops={"queue": 2}), LaneCounters())
    p = point_of((7, 0), 3, d, NOW, 1.0)
    assert p is not None
    assert (p.throughput_bps, p.rx_packets, p.loss_pct) == (80_000, 8, 20.0)
    assert p.delay_p99_ms is None and p.delay_mean_ms is None and p.jitter_ms is None


def test_an_idle_lane_makes_no_sample() -> None:
    assert point_of((7, 0), 3, lane_delta(LaneCounters(packets=5), LaneCounters(packets=5)), NOW, 1.0) is None


def test_a_drop_cause_that_disappears_is_a_restart() -> None:
    with pytest.raises(CounterReset):
        lane_delta(LaneCounters(packets=10), LaneCounters(packets=5, drops={"queue": 3}))


def test_slice_lanes_map_to_catalogue_lanes() -> None:
    before = Counters(timestamp=0, epoch="a", slice_lanes={"1/1": LaneCounters(packets=5, bytes=500)})
    now = Counters(
        timestamp=1,
        epoch="a",
        slice_lanes={"1/1": LaneCounters(packets=15, bytes=1500), "1/3": LaneCounters(packets=4, bytes=40)},
    )
    out = interval_deltas(now, before, IR, EXPLANATION)
    assert {k: (v.packets, v.bytes) for k, v in out.items()} == {(7, 0): (10, 1000), (7, 2): (4, 40)}


def test_an_epoch_change_is_a_restart_even_when_counters_grew() -> None:
    before = Counters(timestamp=0, epoch="a", slice_lanes={"1/1": LaneCounters(packets=5)})
    now = Counters(timestamp=1, epoch="b", slice_lanes={"1/1": LaneCounters(packets=50)})
    with pytest.raises(CounterReset):
        interval_deltas(now, before, IR, EXPLANATION)


def test_per_rule_counters_fold_through_the_rule_set_with_slice_drops_of_a_single_lane() -> None:
    before = Counters(
        timestamp=0,
        rules={0: LaneCounters(packets=10, bytes=1000)},
        slices={1: LaneCounters(packets=8, drops={"meter_red": 2})},
    )
    now = Counters(
        timestamp=1,
        rules={0: LaneCounters(packets=110, bytes=11000), 1: LaneCounters()},
        slices={1: LaneCounters(packets=80, drops={"meter_red": 30})},
    )
    out = interval_deltas(now, before, IR, EXPLANATION)
    assert (out[(7, 0)].packets, out[(7, 0)].drops) == (100, {"meter_red": 28})
    assert out[(7, 2)].packets == 0


def test_a_rule_counter_going_backwards_is_a_restart() -> None:
    before = Counters(timestamp=0, rules={0: LaneCounters(packets=1000, bytes=10**6)})
    now = Counters(timestamp=1, rules={0: LaneCounters(packets=3, bytes=300)})
    with pytest.raises(CounterReset):
        interval_deltas(now, before, IR, EXPLANATION)


# ---- delay percentiles ---------------------------------------------------------------------


def test_percentile_interpolates_inside_the_bucket() -> None:
    d = delay_delta(hist({4: 100}), None)  # 100 sojourns in [16, 32) us
    assert d is not None
    assert percentile(d, 0.5) == pytest.approx(16 + 16 * 49.5 / 100)  # the 50th at the middle of its share
    assert percentile(d, 0.99) == pytest.approx(16 + 16 * 98.5 / 100)
    stats = delay_stats(d)
    assert stats is not None and stats.mean_ms == pytest.approx(0.016)  # the sum is exact: 100 x 16 us


def test_the_open_last_bucket_is_bounded_by_the_largest_sojourn() -> None:
    d = delay_delta(hist({DELAY_BUCKETS - 1: 1}, mx=(1 << 31) + 5), None)
    assert d is not None and percentile(d, 0.99) == pytest.approx((1 << 31) + 5, rel=0.02)


def test_a_histogram_going_backwards_does_not_subtract() -> None:
    assert delay_delta(hist({3: 1}), hist({3: 5})) is None
    assert delay_delta(hist({3: 1}, unit_ns=1), hist({3: 1})) is None


@given(st.lists(st.integers(0, 1 << 20), min_size=1, max_size=400), st.sampled_from([0.5, 0.9, 0.99]))
def test_percentile_error_is_below_the_bucket_width(sojourns: list[int], q: float) -> None:
    """The documented bound: the estimate lies within the true quantile's bucket."""
    buckets: dict[int, int] = {}
    for s in sojourns:
        i = min(max(s, 1).bit_length() - 1, DELAY_BUCKETS - 1)
        buckets[i] = buckets.get(i, 0) + 1
    d = DelayDelta(
        1, len(sojourns), sum(sojourns), tuple(buckets.get(i, 0) for i in range(DELAY_BUCKETS)), max(sojourns)
    )
    est = percentile(d, q)
    true = sorted(sojourns)[max(math.ceil(q * len(sojourns)) - 1, 0)]
    assert est is not None
    low, high = bucket_bounds(min(max(true, 1).bit_length() - 1, DELAY_BUCKETS - 1))
    assert low <= est <= high and abs(est - true) < high - low
