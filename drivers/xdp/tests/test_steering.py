"""Seed 001 Algorithm 1 on BPF_PROG_TEST_RUN: prioritised lanes are redirected to their
CPU, misses / alt lanes / overloaded CPUs are rewritten towards the alt node and sent
back with XDP_TX (checksums still valid), and every packet is counted where it went."""

from __future__ import annotations

import os
import threading
from collections.abc import Iterator

import pytest
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from sliceportal.drivers.contract import DriverError, LaneCounters
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build, build_bytes
from sliceportal_xdp import layout
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.libbpf import XDP_PASS, XDP_REDIRECT, XDP_TX

from .conftest import ALT_IP, ALT_MAC, SRC_MAC, loaded, noop

pytestmark = pytest.mark.needs_root

PRIO_TEID, BULK_TEID = 10, 20


def ir() -> RuleIR:
    # seed 001 §6: services told apart by TEID; lane 3 prioritised, lane 2 bulk
    return RuleIR(
        lanes=4,
        paths=8,
        rules=(
            Rule(Match(teid=Ternary.exact(PRIO_TEID, 32)), Action(1, 3, 0)),
            Rule(Match(teid=Ternary.exact(BULK_TEID, 32)), Action(2, 2, 1)),
        ),
        miss=MissPolicy(MissMode.FIXED, lane=0, rr_path=7),
    )


@pytest.fixture(scope="module")
def steering() -> Iterator[Driver]:
    d = loaded(alt_lanes=[2], lane_cpus={0: 0, 1: 0, 2: 0, 3: 1})
    d.apply(d.lower(ir()), noop)
    yield d
    d.close()


def flow(teid: int, encap: Encap = Encap.VXLAN_GTP, proto: str = "udp") -> Flow:
    return Flow("10.1.0.1", "10.2.0.1", 5000, teid=teid, vni=3, encap=encap, proto=proto)


def assert_checksums_valid(frame: bytes) -> None:
    got = Ether(frame)
    ip = got[IP]  # the outermost IPv4 header, the one rewritten
    fresh = ip.copy()
    del fresh.chksum
    l4 = fresh.payload
    if isinstance(l4, UDP | TCP) and not (isinstance(l4, UDP) and ip[UDP].chksum == 0):
        del l4.chksum
    again = IP(bytes(fresh))
    assert ip.chksum == again.chksum
    if isinstance(ip.payload, UDP) and ip[UDP].chksum != 0:
        assert ip[UDP].chksum == again[UDP].chksum
    if isinstance(ip.payload, TCP):
        assert ip[TCP].chksum == again[TCP].chksum


def test_prioritised_lane_is_redirected_to_its_cpu(steering: Driver) -> None:
    r = steering.run(build_bytes(flow(PRIO_TEID)))
    assert r.retval == XDP_REDIRECT
    assert steering.last_decision().lane == 3


@pytest.mark.parametrize("encap", list(Encap))
@pytest.mark.parametrize("proto", ["udp", "tcp"])
def test_alt_lane_is_rewritten_to_the_alt_node(steering: Driver, encap: Encap, proto: str) -> None:
    pkt = build(flow(BULK_TEID, encap, proto), b"hello")
    r = steering.run(bytes(pkt))
    assert r.retval == XDP_TX
    out = Ether(r.data)
    assert (out.dst, out.src, out[IP].dst) == (ALT_MAC, SRC_MAC, ALT_IP)
    assert_checksums_valid(r.data)
    # byte for byte what scapy builds with the new addresses (it recomputes checksums)
    expect = pkt.copy()
    expect[Ether].dst, expect[Ether].src = ALT_MAC, SRC_MAC
    expect[IP].dst = ALT_IP
    assert r.data == bytes(expect)


def test_misses_go_to_the_alt_node(steering: Driver) -> None:
    r = steering.run(build_bytes(flow(999)))
    d = steering.last_decision()
    assert d.rule == layout.MISS_INDEX and (d.lane, d.rr_path) == (0, 7)
    assert r.retval == XDP_TX


def test_overloaded_cpu_sends_its_prioritised_lane_to_alt(steering: Driver) -> None:
    pkt = build_bytes(flow(PRIO_TEID))
    try:
        steering.set_overloaded({1})
        assert steering.run(pkt).retval == XDP_TX
        steering.set_overloaded({0})  # another CPU: lane 3 is on CPU 1
        assert steering.run(pkt).retval == XDP_REDIRECT
    finally:
        steering.set_overloaded(None)
    assert steering.run(pkt).retval == XDP_REDIRECT


def test_cpumap_queue_drops_mark_the_cpu_overloaded() -> None:
    # a tiny cpumap queue on CPU 1 and live test runs (redirects really happen): the
    # queue overflows, the tracepoint program counts it, detection marks the CPU
    cpu = 1 % (os.cpu_count() or 1)
    d = Driver(
        {
            "record_last": True,
            "overload_poll_s": 0,
            "cpumap_qsize": 8,
            "lane_cpus": {3: cpu},
            "overload_busy": 1.0,
            "alt_mac": ALT_MAC,
            "alt_ip": ALT_IP,
        }
    )
    try:
        d.apply(d.lower(ir()), noop)
        if not d.dataplane.traces_cpumap:
            pytest.skip("no kernel BTF (/sys/kernel/btf/vmlinux): the cpumap tracepoint cannot load")
        pkt = build_bytes(flow(PRIO_TEID))
        before = d.raw_counters().cpumap_drops.get(cpu, 0)
        t = threading.Thread(target=lambda: d.run(pkt, repeat=200_000, live=True))
        t.start()
        hot = d.detect_overload(0.3)
        t.join()
        assert d.raw_counters().cpumap_drops.get(cpu, 0) > before
        assert cpu in hot
        assert d.run(pkt).retval == XDP_TX  # its prioritised lane now goes to alt
    finally:
        d.close()


def test_counters_follow_the_decisions(steering: Driver) -> None:
    before = steering.counters()
    n_prio, n_bulk, n_miss = 7, 5, 3
    sizes = {}
    for teid, n in ((PRIO_TEID, n_prio), (BULK_TEID, n_bulk), (999, n_miss)):
        pkt = build_bytes(flow(teid))
        sizes[teid] = len(pkt)
        for _ in range(n):
            steering.run(pkt)
    after = steering.counters()
    lane = lambda c, k: c.lanes[k]  # noqa: E731
    assert lane(after, "0/3").packets - lane(before, "0/3").packets == n_prio
    assert lane(after, "0/3").bytes - lane(before, "0/3").bytes == n_prio * sizes[PRIO_TEID]
    assert lane(after, "0/3").alt_forwarded == lane(before, "0/3").alt_forwarded
    assert lane(after, "1/2").alt_forwarded - lane(before, "1/2").alt_forwarded == n_bulk
    assert after.rules[0].packets - before.rules[0].packets == n_prio
    assert after.rules[1].alt_forwarded - before.rules[1].alt_forwarded == n_bulk
    assert after.misses.packets - before.misses.packets == n_miss
    assert after.misses.alt_forwarded - before.misses.alt_forwarded == n_miss
    assert after.slices[2].packets - before.slices.get(2, LaneCounters()).packets == n_bulk
    raw = steering.raw_counters()
    assert raw.lanes[0 * layout.MAX_LANES + 3].steered >= n_prio


def test_without_an_alt_node_unprioritised_traffic_is_passed() -> None:
    d = Driver({"record_last": True, "overload_poll_s": 0, "misses_to_alt": True})
    try:
        d.apply(d.lower(ir()), noop)
        before = d.raw_counters().globals[layout.G_TX_NO_ALT]
        assert d.run(build_bytes(flow(999))).retval == XDP_PASS
        assert d.raw_counters().globals[layout.G_TX_NO_ALT] == before + 1
    finally:
        d.close()


def test_misses_can_be_prioritised_by_option() -> None:
    d = Driver(
        {
            "record_last": True,
            "overload_poll_s": 0,
            "misses_to_alt": False,
            "steer": "pass",
            "alt_mac": ALT_MAC,
            "alt_ip": ALT_IP,
        }
    )
    try:
        d.apply(d.lower(ir()), noop)
        assert d.run(build_bytes(flow(999))).retval == XDP_PASS
        assert d.run(build_bytes(flow(PRIO_TEID))).retval == XDP_PASS  # steer "pass": no cpumap
    finally:
        d.close()


def test_bad_options_are_a_typed_error() -> None:
    for bad in (
        {"lanes": 3},
        {"alt_mac": "nonsense"},
        {"capacity": {"nope": 1}},
        {"unknown": 1},
        {"lane_cpus": {0: 999}},
    ):
        with pytest.raises(DriverError):
            d = Driver(bad)
            try:
                d.dataplane  # noqa: B018 - CPUs are checked when the program is configured
            finally:
                d.close()
