"""The netfpga driver's per slice x lane counters (issue #25) against the running model:
entered / left / dropped per IR slice and lane and the in-plane queueing delay, checked
against the frames the model captured, a hand-computed quiet sojourn, strict priority
under congestion, monotonic reads and the counter epoch of a restarted card."""

from __future__ import annotations

import csv
from collections import Counter, defaultdict
from pathlib import Path

from scapy.packet import Packet
from scapy.utils import wrpcap

from sliceportal.drivers.contract import Counters
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Flow, build
from sliceportal_netfpga import simulator
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.simulator import SimProcess

LANES = 4
PAYLOAD = b"q" * 100  # in the 5G format (VXLAN / GTP-U): a 228-byte frame, 8 beats of 32 bytes


def two_slices() -> RuleIR:
    """Slice s + 1 owns 10.<s>.0.0/24; port block 5000 + 8 * lane picks its lane."""
    return RuleIR(
        lanes=LANES,
        paths=8,
        rules=tuple(
            Rule(
                Match(src_ip=Ternary.prefix(0x0A000000 | s << 16, 24, 32), dst_port=Ternary(5000 + 8 * lane, 0xFFF8)),
                Action(slice_id=s + 1, lane=lane, rr_path=s),
            )
            for s in range(2)
            for lane in range(LANES)
        ),
    )


def frames(per_pair: int) -> list[Packet]:
    return [
        build(Flow(f"10.{s}.0.{u + 1}", "10.99.0.1", 5000 + 8 * lane), PAYLOAD)
        for u in range(per_pair)
        for s in range(2)
        for lane in range(LANES)
    ]


def run(sim: SimProcess, tmp: Path, name: str, pkts: list[Packet], gap: int) -> list[dict[str, int]]:
    wrpcap(str(tmp / f"{name}.pcap"), pkts)
    sim.command(f"CAPTURE {tmp / name}.out.pcap")
    sim.command(f"INJECT {tmp / name}.pcap {gap}")
    sim.command("RUN")
    sim.command(f"CAPTURE {tmp / 'idle'}.out.pcap")  # closes and flushes the capture
    with open(tmp / f"{name}.out.pcap.csv") as fh:
        return [{k: int(v) for k, v in r.items()} for r in csv.DictReader(fh)]


def check_against_capture(c: Counters, rows: list[dict[str, int]]) -> None:
    sent: Counter[str] = Counter()
    nbytes: Counter[str] = Counter()
    for r in rows:
        sent[f"{r['slice_id']}/{r['lane']}"] += 1
        nbytes[f"{r['slice_id']}/{r['lane']}"] += r["len"]
    assert set(c.slice_lanes) == {f"{s}/{lane}" for s in (1, 2) for lane in range(LANES)}
    for key, lc in c.slice_lanes.items():
        assert (lc.tx_packets, lc.tx_bytes) == (sent[key], nbytes[key]), key
        # the queue drained: what entered left or was dropped
        assert lc.packets == lc.tx_packets + sum(lc.drops.values()), key
        assert lc.delay is not None and lc.delay.unit_ns == 5  # 200 MHz
        assert lc.delay.count == lc.tx_packets == sum(lc.delay.buckets), key


def test_slice_lane_counters_and_queueing_delay(sim: SimProcess, tmp_path: Path) -> None:
    d = Driver({"address": sim.address})
    try:
        d.apply(d.lower(two_slices()), lambda _: None)
        # Quiet: one frame at a time into empty queues (and a DMA port with credit). A frame of
        # B beats reaches the queue one beat per cycle (the parser stores and forwards it):
        # first beat in cycle t, last in t + B - 1, committed at its end, seen by the
        # scheduler in t + B and picked there, first beat out in t + B + 1: sojourn B + 1.
        quiet = run(sim, tmp_path, "quiet", frames(3), gap=400)
        c1 = d.counters()
        check_against_capture(c1, quiet)
        (length,) = {r["len"] for r in quiet}
        sojourn = -(-length // 32) + 1
        for key, lc in c1.slice_lanes.items():
            assert lc.delay is not None
            assert (lc.delay.count, lc.delay.sum, lc.delay.max) == (3, 3 * sojourn, sojourn), key
            assert lc.delay.buckets[sojourn.bit_length() - 1] == 3, key
        # Congested: back to back at 10 Gb/s into a 4 Gb/s DMA drain (the model's defaults).
        busy = run(sim, tmp_path, "busy", frames(12), gap=0)
        c2 = d.counters()
        check_against_capture(c2, quiet + busy)
        assert c2.epoch == c1.epoch and c1.epoch
        for key, lc in c2.slice_lanes.items():
            old = c1.slice_lanes[key]
            assert lc.delay is not None and old.delay is not None
            assert lc.packets >= old.packets and lc.delay.sum >= old.delay.sum and lc.delay.max >= old.delay.max
            assert all(b >= a for a, b in zip(old.delay.buckets, lc.delay.buckets, strict=True)), key
        # A packet's sojourn is part of its time from ingress to its last beat out.
        longest = defaultdict(int)
        for r in busy:
            longest[f"{r['slice_id']}/{r['lane']}"] = max(
                longest[f"{r['slice_id']}/{r['lane']}"], r["out_cycle"] - r["in_cycle"]
            )
        for key, lc in c2.slice_lanes.items():
            assert lc.delay is not None and 7 < lc.delay.max < longest[key], key
        # Strict priority inside a path: the mean wait falls with the lane.
        for s in (1, 2):
            means = []
            for lane in range(LANES):
                lc, old = c2.slice_lanes[f"{s}/{lane}"], c1.slice_lanes[f"{s}/{lane}"]
                assert lc.delay is not None and old.delay is not None
                means.append((lc.delay.sum - old.delay.sum) / (lc.delay.count - old.delay.count))
            assert means == sorted(means, reverse=True) and means[0] > 2 * means[-1], (s, means)
    finally:
        d.close()
    # A restarted card: counters from zero under a new epoch.
    again = simulator.start(tmp_path / "again.sock")
    d2 = Driver({"address": again.address})
    try:
        d2.apply(d2.lower(two_slices()), lambda _: None)
        c3 = d2.counters()
        assert c3.epoch and c3.epoch != c1.epoch
        assert d2.counters().epoch == c3.epoch
        assert all(lc.packets == 0 and lc.delay is not None and lc.delay.count == 0 for lc in c3.slice_lanes.values())
    finally:
        d2.close()
        again.stop()
