"""The meter's arithmetic on small cases computed by hand."""

from __future__ import annotations

import pytest

from sliceportal.traffic.meter import Meter, percentile, rfc3550_jitter


def test_percentile_nearest_rank() -> None:
    values = [10, 20, 30, 40, 50, 60, 70, 80, 90, 100]
    assert percentile(values, 50) == 50  # ceil(0.5 * 10) = 5th
    assert percentile(values, 99) == 100  # ceil(9.9) = 10th
    assert percentile(values, 10) == 10
    assert percentile(values, 11) == 20  # ceil(1.1) = 2nd
    assert percentile([7], 99) == 7
    with pytest.raises(ValueError):
        percentile([], 50)
    with pytest.raises(ValueError):
        percentile(values, 0)


def test_rfc3550_jitter_by_hand() -> None:
    # transits 100, 116, 100: D = 16 then 16 -> J = 1, then 1 + (16 - 1)/16 = 1.9375
    assert rfc3550_jitter([100, 116, 100]) == pytest.approx(1.9375)
    assert rfc3550_jitter([5, 5, 5, 5]) == 0.0
    assert rfc3550_jitter([]) == 0.0


def test_flow_delay_jitter_match_the_definitions() -> None:
    m = Meter()
    # (seq, send, recv): transits 1000, 1160, 1000, 2000 ns in arrival order
    for seq, send, recv in [(0, 0, 1000), (1, 10_000, 11_160), (2, 20_000, 21_000), (3, 30_000, 32_000)]:
        m.add(7, seq, send, recv, 100)
    flow = m.report().flows[0]
    assert flow.received == 4 and flow.lost == 0 and flow.bytes == 400
    assert flow.delay is not None
    assert flow.delay.mean_us == pytest.approx((1000 + 1160 + 1000 + 2000) / 4 / 1e3)
    assert flow.delay.p50_us == pytest.approx(1.0)  # sorted 1000 1000 1160 2000, 2nd
    assert flow.delay.p99_us == pytest.approx(2.0)
    assert flow.delay.max_us == pytest.approx(2.0)
    assert flow.delay.min_us == pytest.approx(1.0)
    # J: 0 -> 10 -> 10 + (160 - 10)/16 = 19.375 -> 19.375 + (1000 - 19.375)/16
    j = 160 / 16
    j += (160 - j) / 16
    j += (1000 - j) / 16
    assert flow.jitter_us == pytest.approx(j / 1e3)
    assert flow.rx_pps == pytest.approx(3 / (31_000e-9))


def test_loss_from_gaps_and_from_the_senders_count() -> None:
    gaps = Meter()
    for seq in (0, 1, 4, 5):  # 2 and 3 missing; nothing says whether 6… were sent
        gaps.add(1, seq, 0, 10)
    flow = gaps.report().flows[0]
    assert (flow.expected, flow.received, flow.lost) == (6, 4, 2)
    assert flow.loss_pct == pytest.approx(100 * 2 / 6)

    counted = Meter(sent={1: 10, 2: 3})  # the sender sent 10 of flow 1 and 3 of flow 2
    for seq in (0, 1, 4, 5):
        counted.add(1, seq, 0, 10)
    report = counted.report()
    by_id = {f.flow_id: f for f in report.flows}
    assert (by_id[1].expected, by_id[1].lost) == (10, 6)  # the tail loss counts too
    assert (by_id[2].received, by_id[2].lost, by_id[2].loss_pct) == (0, 3, 100.0)
    assert by_id[2].delay is None
    assert report.total.lost == 9 and report.total.expected == 13


def test_reordering_and_duplicates() -> None:
    m = Meter()
    for seq in (0, 2, 1, 3, 3, 5, 4, 2):
        m.add(1, seq, 0, 100)
    flow = m.report().flows[0]
    # 1 arrives after 2, 4 after 5: two reordered; the second 3 and the second 2 are duplicates
    assert flow.reordered == 2
    assert flow.duplicates == 2
    assert flow.received == 6 and flow.lost == 0
    assert flow.delay is not None and flow.delay.max_us == pytest.approx(0.1)


def test_aggregation_per_slice_and_lane_pools_packets() -> None:
    places = {1: (0, 3), 2: (0, 3), 3: (0, 0), 4: (1, 0)}
    m = Meter(places, sent={1: 2, 2: 2, 3: 4, 4: 1})
    m.add(1, 0, 0, 1000)
    m.add(1, 1, 0, 3000)
    m.add(2, 0, 0, 2000)  # flow 2 lost seq 1
    m.add(3, 0, 0, 9000)  # flow 3 lost 3 of 4
    m.add(4, 0, 0, 5000)
    m.add(99, 0, 0, 1)  # a flow nobody mapped
    m.add_foreign(2)
    r = m.report()
    lanes = {(g.slice_index, g.lane): g for g in r.lanes}
    top = lanes[(0, 3)]
    assert (top.flows, top.expected, top.received, top.lost) == (2, 4, 3, 1)
    assert top.loss_pct == pytest.approx(25.0)
    assert top.delay is not None
    assert top.delay.mean_us == pytest.approx(2.0)  # pooled 1000, 3000, 2000
    assert top.delay.p50_us == pytest.approx(2.0)
    # jitter: flow 1 has J = 2000/16 = 125 ns over 2 packets, flow 2 has 0 over 1 packet
    assert top.jitter_us == pytest.approx(125 * 2 / 3 / 1e3)
    assert top.jitter_max_us == pytest.approx(0.125)
    slices = {g.slice_index: g for g in r.slices}
    assert slices[0].expected == 8 and slices[0].lost == 4
    assert slices[1].lost == 0
    assert slices[None].flows == 1  # flow 99
    assert r.unexpected_flows == [99]
    assert r.foreign == 2
    assert r.total.flows == 5 and r.total.received == 6


def test_intervals_count_loss_per_interval_and_carry_jitter() -> None:
    m = Meter(places={1: (0, 0)}, sent={1: 100})
    for seq in (0, 1, 2, 4):  # 3 missing so far
        m.add(1, seq, 0, 1000 + 100 * seq)
    first = m.interval_report().flows[0]
    assert (first.expected, first.received, first.lost) == (5, 4, 1)
    jitter_after_first = first.jitter_us
    m.add(1, 3, 0, 5000)  # late: reordered, and not counted against the new interval
    for seq in (5, 8):  # 6 and 7 missing
        m.add(1, seq, 0, 1000)
    second = m.interval_report().flows[0]
    assert (second.expected, second.received, second.lost) == (4, 3, 2)  # seqs 5..8
    assert second.reordered == 1
    assert second.sent is None  # whole-run counts do not apply to an interval
    assert second.jitter_us > jitter_after_first  # the late packet's 4000 ns transit swing
    m.add(1, 8, 0, 1000)  # a duplicate of the previous interval's packet
    third = m.interval_report().flows[0]
    assert (third.expected, third.received, third.duplicates, third.lost) == (0, 0, 1, 0)


def test_explicit_times_from_simulated_cycles() -> None:
    from sliceportal.traffic import packets
    from sliceportal.traffic.meter import cycles_to_ns

    assert cycles_to_ns(3, 200e6) == 15  # NetFPGA SUME datapath clock: 5 ns per cycle
    frame = packets.build_bytes(packets.Flow("10.0.0.33", "10.100.0.1", 5000), packets.payload(9, 0, 123, 40))
    m = Meter()
    assert m.add_frame(frame, recv_ns=cycles_to_ns(1300, 200e6), send_ns=cycles_to_ns(1000, 200e6))
    assert not m.add_frame(b"\x00" * 20, recv_ns=0)
    r = m.report()
    assert r.flows[0].delay is not None and r.flows[0].delay.mean_us == pytest.approx(1.5)  # 300 cycles
    assert r.foreign == 1


def test_seqset_bitmap_duplicates_growth_and_hostile_numbers() -> None:
    from sliceportal.traffic.meter import SeqSet

    seen = SeqSet()
    assert seen.add(0) and seen.add(7) and seen.add(8) and seen.add(1000)
    assert not seen.add(7) and not seen.add(1000)
    assert len(seen.bits) < 1000  # one bit per number, grown by doubling
    huge = 2**64 - 1  # a corrupt header must not make the bitmap allocate up to it
    assert seen.add(huge) and not seen.add(huge)
    assert len(seen.bits) < 1000
    for q in range(SeqSet.MAX_FAR + 10):  # the outlier set stays bounded
        seen.add(2**40 + q * 2**30)
    assert len(seen.far) <= SeqSet.MAX_FAR
    seen.forget_below(512)
    assert seen.base == 512 and not seen.add(1000)  # still remembered
    assert seen.add(7)  # forgotten: cannot be told from a new packet


def test_meter_survives_hostile_sequence_numbers() -> None:
    m = Meter()
    m.add(1, 0, 0, 10)
    m.add(1, 2**64 - 1, 0, 10)
    flow = m.report().flows[0]
    assert flow.received == 2 and flow.lost == 2**64 - 2  # reported, not a crash
