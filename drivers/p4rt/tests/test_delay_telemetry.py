"""Queueing delay measured in the P4 data plane (#25), read by the driver into
``Counters.slice_lanes``: on the bundled target against sojourns computed by hand from a
queue the test builds (a burst into a rate-limited link), and on the real
``simple_switch_grpc`` for what must hold on any switch (the histogram counts every packet
that left once, its sum and max agree with its buckets).

``needs_bmv2`` / ``needs_root`` (veths) for the BMv2 test only.
"""

from __future__ import annotations

import os
import random
import socket
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Any

import pytest
from bmv2_target.packet_io import open_port, receive
from bmv2_target.testing import Target

from sliceportal.drivers.contract import DELAY_BUCKETS, DelayHistogram, LaneCounters
from sliceportal.rules.ir import Action, Match, MissPolicy, Qos, Rule, RuleIR, SliceEntry, Ternary
from sliceportal.traffic.packets import Flow
from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc
from sliceportal_p4rt.telemetry import bucket_of

from .irs import TENANT_A
from .traffic import frame, read_pcap, run_pcaps, veth_ports, write_pcap

OPTIONS: dict[str, Any] = {"access_ports": {1: 100}, "trunk_ports": [3], "uplink_port": 3}
LANE = 4
BURST = 20  # frames, below the queue depth (64): none tail-dropped


def ir() -> RuleIR:
    """Tenant A's traffic, all in slice 1 on lane 4, no policer."""
    return RuleIR(
        lanes=8,
        paths=1,
        rules=(Rule(Match(vni=Ternary.exact(1001, 24)), Action(1, LANE, 0), "a all"),),
        slices=(SliceEntry(1, 31, "a", 1001, 100, (LANE,), Qos()),),
        tenants=(TENANT_A,),
        miss=MissPolicy(),
    )


def burst_frame() -> bytes:
    return frame(Flow("10.1.0.7", "10.9.0.1", 5000, vni=1001, teid=7), 1000)[0]


def assert_consistent(lane: LaneCounters, left: int) -> DelayHistogram:
    """What holds of any switch's histogram: every packet that left counted once, the sum
    within what the buckets allow, the max in the highest bucket used."""
    d = lane.delay
    assert d is not None and d.unit_ns == 1000
    assert lane.tx_packets == left and d.count == left == sum(d.buckets)
    used = [b for b in range(DELAY_BUCKETS) if d.buckets[b]]
    assert bucket_of(d.max) == used[-1]
    low = sum(n * (1 << b if b else 0) for b, n in enumerate(d.buckets))
    high = sum(n * ((1 << (b + 1)) - 1) for b, n in enumerate(d.buckets))
    assert low <= d.sum <= high and d.sum <= d.count * d.max
    return d


def test_bundled_target_measures_the_sojourns_of_a_queue(start_target: Callable[..., Target], tmp_path: Path) -> None:
    data = burst_frame()
    rate = len(data) * 8 * 1000  # one frame per millisecond on the link
    target = start_target("--priority-queues", "8", "--link-rate-bps", str(rate))
    drv = Driver({"address": target.address, **OPTIONS})
    drv.apply(drv.lower(ir()), lambda e: None)
    before = drv.counters()
    assert before.epoch and before.slice_lanes == {}  # nothing entered yet
    # the burst: frame k arrives k us after the first, leaves the queue at k ms
    t0 = 10**9
    write_pcap(tmp_path / "in1.pcap", [(t0 + k * 1000, data) for k in range(BURST)])
    run_pcaps(target.address, {1: tmp_path / "in1.pcap"}, tmp_path / "out")
    out = read_pcap(tmp_path / "out" / "port3.pcap")
    c = drv.counters()
    lane = c.slice_lanes[f"1/{LANE}"]
    assert len(out) == BURST and lane.packets == BURST and lane.drops == {}
    sojourns = [k * 1000 - k for k in range(BURST)]  # us
    d = assert_consistent(lane, BURST)
    assert d.sum == sum(sojourns) and d.max == max(sojourns)
    assert list(d.buckets) == [sum(1 for s in sojourns if bucket_of(s) == b) for b in range(DELAY_BUCKETS)]
    assert c.epoch == before.epoch
    drv.close()
    # a restarted switch: new counters, a new epoch
    again = start_target("--priority-queues", "8")
    drv = Driver({"address": again.address, **OPTIONS})
    assert drv.counters().epoch not in (None, c.epoch)
    drv.close()


def burst_through(address: str, ends: dict[int, tuple[str, str]]) -> LaneCounters:
    """BURST frames back to back into port 1 (they queue behind each other), until all left
    on port 3 and the switch counted them: the slice lane's counters."""
    data = burst_frame()
    drv = Driver({"address": address, **OPTIONS})
    drv.apply(drv.lower(ir()), lambda e: None)
    rx = open_port(ends[3][1])
    rx.setblocking(False)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((ends[1][1], 0))
    for _ in range(BURST):
        tx.send(data)
    got, deadline = 0, time.monotonic() + 20
    lane = LaneCounters()
    while time.monotonic() < deadline:
        while True:
            try:
                f = receive(rx)
            except BlockingIOError:
                break
            got += f is not None
        lane = drv.counters().slice_lanes.get(f"1/{LANE}", LaneCounters())
        if got == BURST and lane.tx_packets == BURST:
            break
        time.sleep(0.05)
    tx.close()
    rx.close()
    drv.close()
    assert got == BURST and lane.packets == BURST, (got, lane)
    return lane


def veths() -> AbstractContextManager[dict[int, tuple[str, str]]]:
    return veth_ports(f"dt{os.getpid() % 10000}{random.randrange(100)}-", (1, 3))


@pytest.mark.needs_root
@pytest.mark.needs_bmv2
def test_simple_switch_grpc_exports_a_consistent_histogram() -> None:
    with veths() as ends, start_simple_switch_grpc({p: s for p, (s, _) in ends.items()}, priority_queues=8) as sw:
        d = assert_consistent(burst_through(sw.address, ends), BURST)
        assert d.max > 0  # BMv2's queue hand-over alone takes microseconds


@pytest.mark.needs_root
def test_bundled_live_ports_measure_a_rate_limited_queue(start_target: Callable[..., Target]) -> None:
    """Live veths, the link at one 1000-byte frame per ms: the burst's last frame waits
    behind the others, up to 19 ms (17 seen: the sender's loop spreads the burst; a loaded
    machine spreads it more, so the test bounds the wait instead of computing it)."""
    rate = len(burst_frame()) * 8 * 1000
    with veths() as ends:
        target = start_target(
            "--priority-queues",
            "8",
            "--link-rate-bps",
            str(rate),
            *(a for p, (s, _) in ends.items() for a in ("-i", f"{p}@{s}")),
        )
        d = assert_consistent(burst_through(target.address, ends), BURST)
        assert 5_000 <= d.max < 1_000_000 and d.sum >= d.max, d
