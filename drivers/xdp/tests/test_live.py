"""Live traffic across the veth testbed: the program attached natively to core's eth0,
seed 001's load (16 services told apart by TEID, 8 prioritised) sent from edge, counted
by the driver and by UDP sockets on core (prioritised, steered to a CPU and passed) and
on alt (forwarded with XDP_TX)."""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import time
from collections.abc import Iterator

import pytest

from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import VXLAN_PORT, Flow, Underlay, build_bytes, payload
from sliceportal_testbed import Testbed, in_netns
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.libbpf import XDP_TX

from .beds import on_testbed
from .conftest import noop, our_payload

pytestmark = pytest.mark.needs_root

PRIO_LANE, BULK_LANE = 3, 2
PER_SERVICE = 25


def seed001_ir() -> RuleIR:
    rules = tuple(
        Rule(Match(teid=Ternary.exact(100 + s, 32)), Action(1 + s % 2, PRIO_LANE if s < 8 else BULK_LANE, s % 8))
        for s in range(16)
    )
    return RuleIR(lanes=4, paths=8, rules=rules, miss=MissPolicy(MissMode.FIXED, lane=0, rr_path=0))


@pytest.fixture(scope="module")
def bed() -> Iterator[tuple[Testbed, Driver]]:
    lane_cpus = {PRIO_LANE: 1 % (os.cpu_count() or 1)}
    with on_testbed(f"spt{os.getpid() % 100000}-", seed001_ir(), alt_lanes=[BULK_LANE], lane_cpus=lane_cpus) as bed:
        yield bed


def listener(ns: str) -> socket.socket:
    with in_netns(ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 << 20)
    s.bind(("0.0.0.0", VXLAN_PORT))
    s.setblocking(False)
    return s


def drain(s: socket.socket, settle_s: float = 0.5) -> set[int]:
    """Flow ids of our packets received (the innermost payload's flow id)."""
    seen: list[int] = []
    deadline = time.monotonic() + settle_s
    while time.monotonic() < deadline:
        try:
            data = s.recv(65536)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if got := our_payload(data):
            seen.append(got[0] * 1_000_000 + got[1])
    return set(seen)


def send_load(tb: Testbed, teids: list[int]) -> dict[int, int]:
    edge, core = tb["edge"], tb["core"]
    u = Underlay(src_mac=edge.mac, dst_mac=core.mac, outer_src=edge.ip, outer_dst=core.ip)
    frames = []
    for seq in range(PER_SERVICE):
        for teid in teids:
            f = Flow("10.45.0.1", "10.60.0.1", 5000, teid=teid, vni=7)
            frames.append(build_bytes(f, payload(teid, seq, 0, 64), u))
    tb.send("edge", frames)
    return {t: PER_SERVICE for t in teids}


def test_prioritised_to_core_others_to_alt(bed: tuple[Testbed, Driver]) -> None:
    tb, d = bed
    on_core, on_alt = listener(tb["core"].netns), listener(tb["alt"].netns)
    before = d.counters()
    teids = [100 + s for s in range(16)] + [999]  # 999: a miss
    send_load(tb, teids)
    core_got, alt_got = drain(on_core), drain(on_alt)
    on_core.close()
    on_alt.close()
    after = d.counters()
    prio = {t * 1_000_000 + q for t in teids[:8] for q in range(PER_SERVICE)}
    rest = {t * 1_000_000 + q for t in teids[8:] for q in range(PER_SERVICE)}
    assert core_got == prio
    assert alt_got == rest
    steered = sum(after.lanes[f"{p}/{PRIO_LANE}"].packets - before.lanes[f"{p}/{PRIO_LANE}"].packets for p in range(8))
    bulk_alt = sum(
        after.lanes[f"{p}/{BULK_LANE}"].alt_forwarded - before.lanes[f"{p}/{BULK_LANE}"].alt_forwarded for p in range(8)
    )
    assert steered == 8 * PER_SERVICE
    assert bulk_alt == 8 * PER_SERVICE
    # background IPv4 on the link (IGMP reports from the bridge) is a miss as well
    assert 0 <= after.misses.alt_forwarded - before.misses.alt_forwarded - PER_SERVICE <= 3
    h = d.health()
    assert h.ok and "attached" in h.detail and h.version == seed001_ir().digest()


def test_overloaded_cpu_moves_its_lane_to_alt(bed: tuple[Testbed, Driver]) -> None:
    tb, d = bed
    cpu = 1 % (os.cpu_count() or 1)
    on_core, on_alt = listener(tb["core"].netns), listener(tb["alt"].netns)
    try:
        d.set_overloaded({cpu})
        send_load(tb, [100, 101])
        core_got, alt_got = drain(on_core), drain(on_alt)
    finally:
        d.set_overloaded(None)
        on_core.close()
        on_alt.close()
    assert core_got == set()
    assert len(alt_got) == 2 * PER_SERVICE
    assert "overloaded" not in d.health().detail


def _spin(seconds: float) -> None:
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        pass


def test_overload_is_detected_from_a_busy_cpu(bed: tuple[Testbed, Driver]) -> None:
    _, d = bed
    cpu = 1 % (os.cpu_count() or 1)
    ctx = mp.get_context("fork")
    spinner = ctx.Process(target=_spin, args=(2.5,))
    spinner.start()
    try:
        os.sched_setaffinity(spinner.pid, {cpu})
        time.sleep(0.3)
        hot = d.detect_overload(1.0)
        assert cpu in hot
        assert cpu in d.dataplane.overloaded()
        pkt = build_bytes(Flow("10.45.0.1", "10.60.0.1", 5000, teid=100, vni=7))
        assert d.run(pkt).retval == XDP_TX  # its prioritised lane now goes to alt
    finally:
        spinner.join()
        d.set_overloaded(None)


def test_close_detaches_and_the_testbed_cleans_up() -> None:
    prefix = f"spc{os.getpid() % 100000}-"
    with Testbed(prefix) as tb:
        d = Driver({"interface": "eth0", "netns": tb["core"].netns, "overload_poll_s": 0})
        d.apply(d.lower(seed001_ir()), noop)
        assert d.health().ok
        d.close()
        out = tb.exec("core", ["ip", "-j", "link", "show", "eth0"]).stdout
        assert '"xdp"' not in out
    assert not any(ns.startswith(prefix) for ns in os.listdir("/run/netns"))


def test_the_overload_poller_marks_a_busy_cpu_and_respects_pins() -> None:
    cpu = 1 % (os.cpu_count() or 1)
    with Testbed(f"spo{os.getpid() % 100000}-") as tb:
        d = Driver({"interface": "eth0", "netns": tb["core"].netns, "overload_poll_s": 0.3})
        spinner = mp.get_context("fork").Process(target=_spin, args=(3.0,))
        try:
            d.apply(d.lower(seed001_ir()), noop)
            spinner.start()
            os.sched_setaffinity(spinner.pid, {cpu})
            deadline = time.monotonic() + 2.5
            while cpu not in d.dataplane.overloaded() and time.monotonic() < deadline:
                time.sleep(0.1)
            assert cpu in d.dataplane.overloaded()
            d.set_overloaded(set())  # pinned: the poller must leave the marks alone
            time.sleep(0.8)
            assert d.dataplane.overloaded() == set()
        finally:
            spinner.join()
            d.close()
