"""ECN marking by the slice's virtual queue (seed 004 M_DELAY, docs/xdp.md "ECN").

The program marks CE on the innermost IPv4 header of an ECN-capable frame (ECT(0),
ECT(1), CE) when the slice's virtual-queue delay after the frame exceeds ``ecn_ms``; a
Not-ECT frame and a header with options are left alone; the header checksum is fixed
incrementally (checked against scapy's recomputation). The frames are fed through
BPF_PROG_TEST_RUN, so the queue is the kernel's own bucket and the clock its ktime.
"""

from __future__ import annotations

import time

import pytest
from scapy.layers.inet import IP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, Ternary
from sliceportal.traffic.packets import Encap, Flow, build
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.lowering import ecn_threshold_ns, qos_entries

from .conftest import noop

pytestmark = pytest.mark.needs_root

NOT_ECT, ECT1, ECT0, CE = 0, 1, 2, 3
ENCAPS = [Encap.VXLAN_GTP, Encap.GTP, Encap.VXLAN, Encap.PLAIN]


def ecn_ir(rate_bps: int, burst_ms: float, ecn_ms: float | None) -> RuleIR:
    """One rule (UE 10.1.0.0/16) into slice 1 with the given virtual queue."""
    return RuleIR(
        lanes=4,
        paths=8,
        rules=(Rule(Match(src_ip=Ternary(0x0A010000, 0xFFFF0000)), Action(1, 1, 0)),),
        slices=(SliceEntry(1, 1, "ecn", 1, None, (1,), Qos(rate_bps=rate_bps, burst_ms=burst_ms, ecn_ms=ecn_ms)),),
    )


def ips(pkt: Packet) -> list[IP]:
    out = []
    layer = pkt.getlayer(IP)
    while layer is not None:
        out.append(layer)
        layer = layer.payload.getlayer(IP)
    return out


def frame(encap: Encap, ecn: int, dscp: int = 10, options: bool = False) -> bytes:
    pkt = build(Flow("10.1.0.1", "10.2.0.1", 5000, dscp=dscp, teid=7, vni=100, encap=encap), bytes(200))
    for i, ip in enumerate(ips(pkt)):
        ip.tos = (ip.tos & 0xFC) | (ECT0 if i < len(ips(pkt)) - 1 else ecn)  # outer ones ECT(0): must stay
        if options and i == len(ips(pkt)) - 1:
            ip.options = [b"\x01\x01\x01\x00"]  # NOP NOP NOP EOL: IHL 6
        ip.len = ip.chksum = None
    return bytes(Ether(bytes(pkt)))


def checksums_valid(data: bytes) -> bool:
    pkt = Ether(data)
    for ip in ips(pkt):
        fixed = IP(bytes(ip))
        fixed.chksum = None
        if IP(bytes(fixed)).chksum != ip.chksum:
            return False
    return True


def tos_bytes(data: bytes) -> list[int]:
    return [ip.tos for ip in ips(Ether(data))]


def marks(driver: Driver) -> tuple[int, int]:
    c = driver.raw_counters().slices.get(1)
    return (c.ecn, c.packets) if c else (0, 0)


def test_lowering_threshold() -> None:
    assert ecn_threshold_ns(None, 1000, 10_000) is None
    assert ecn_threshold_ns(5, 6_000_000, 120_000) == 5_000_000  # 48 Mbit/s, 20 ms burst
    assert ecn_threshold_ns(20, 6_000_000, 120_000) is None  # the queue never gets that deep
    assert ecn_threshold_ns(0, 6_000_000, 120_000) == 0
    q = qos_entries(ecn_ir(48_000_000, 20, 5))[0]
    assert (q["rate_Bps"], q["burst_bytes"], q["ecn_ns"]) == (6_000_000, 120_000, 5_000_000)
    assert qos_entries(ecn_ir(48_000_000, 20, None))[0]["ecn_ns"] is None


def test_read_state_gives_back_the_ecn_threshold(driver: Driver) -> None:
    plan = driver.lower(ecn_ir(48_000_000, 20, 5))
    driver.apply(plan, noop)
    assert driver.read_state().tables["qos"] == plan.tables["qos"]


@pytest.mark.parametrize("encap", ENCAPS, ids=lambda e: e.value)
def test_marks_ect_frames_on_the_innermost_header(driver: Driver, encap: Encap) -> None:
    # ecn_ms 0: every frame the queue admits is above the threshold; a deep, fast queue
    # admits them all, so the outcome does not depend on timing
    driver.apply(driver.lower(ecn_ir(10_000_000_000, 1000, 0)), noop)
    for ecn in (ECT0, ECT1, CE):
        before = marks(driver)
        data = frame(encap, ecn)
        r = driver.run(data)
        tos_in, tos_out = tos_bytes(data), tos_bytes(r.data)
        assert tos_out[-1] == (tos_in[-1] | CE), (encap, ecn, tos_in, tos_out)
        assert tos_out[-1] >> 2 == 10  # DSCP untouched
        assert tos_out[:-1] == tos_in[:-1], "only the innermost header is marked"
        assert checksums_valid(r.data), r.data.hex()
        assert len(r.data) == len(data) and sum(a != b for a, b in zip(r.data, data, strict=True)) <= 3
        after = marks(driver)
        assert (after[0] - before[0], after[1] - before[1]) == (1, 1)


@pytest.mark.parametrize("encap", ENCAPS, ids=lambda e: e.value)
def test_not_ect_and_options_are_left_alone(driver: Driver, encap: Encap) -> None:
    driver.apply(driver.lower(ecn_ir(10_000_000_000, 1000, 0)), noop)
    before = marks(driver)
    for data in (frame(encap, NOT_ECT), frame(encap, ECT0, options=True)):
        r = driver.run(data)
        assert r.data == data
    after = marks(driver)
    assert after[0] == before[0] and after[1] == before[1] + 2


def test_no_marks_below_the_threshold(driver: Driver) -> None:
    # 1 Gbit/s, 50 ms target: a few hundred frames never build 50 ms of queue
    driver.apply(driver.lower(ecn_ir(1_000_000_000, 300, 50)), noop)
    before = marks(driver)
    data = frame(Encap.VXLAN_GTP, ECT0)
    for _ in range(200):
        assert driver.run(data).data == data
    after = marks(driver)
    assert after[0] == before[0] and after[1] == before[1] + 200


def test_no_marks_without_an_ecn_target(driver: Driver) -> None:
    driver.apply(driver.lower(ecn_ir(20_000_000, 300, None)), noop)
    before = marks(driver)
    driver.run(frame(Encap.VXLAN_GTP, ECT0), repeat=2000)
    assert marks(driver)[0] == before[0]


def test_marks_start_once_the_queue_is_deeper_than_the_target(driver: Driver) -> None:
    # 20 Mbit/s with a 5 ms target: 12 500 bytes of queue. A burst of frames far faster
    # than the rate fills it: the first frames (while the backlog stays below 12 500
    # bytes) pass unmarked, the rest are marked until the 300 ms bucket drops them.
    rate_Bps, ecn_ms = 20_000_000 // 8, 5
    driver.apply(driver.lower(ecn_ir(rate_Bps * 8, 300, ecn_ms)), noop)
    time.sleep(0.35)  # the bucket is full: an empty queue
    data = frame(Encap.VXLAN_GTP, ECT0)
    before = driver.raw_counters().slices.get(1)
    driver.run(data, repeat=2000)
    after = driver.raw_counters().slices[1]
    sent = after.packets - (before.packets if before else 0)
    dropped = after.drop_rate - (before.drop_rate if before else 0)
    marked = after.ecn - (before.ecn if before else 0)
    passed = sent - dropped
    unmarked = passed - marked
    # at least the frames that fit under the target before the queue crosses it (the
    # queue also drains while they run, so more may pass unmarked: never fewer)
    assert unmarked >= (rate_Bps * ecn_ms // 1000) // len(data), (sent, dropped, marked)
    assert marked > passed / 2, (sent, dropped, marked)
