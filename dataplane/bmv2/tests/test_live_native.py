"""The bundled target's native live data path (engine/src/live.rs) on real veth links:
the egress queues tail-drop at the queue depth behind a slow link and drain when the rate
is lifted (SetLinkRate / Status, the testbed's congestion controls), and a packet queued
under a replaced pipeline (SetForwardingPipelineConfig) is never sent by the new one."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bmv2_target.engine import offer_closed_loop  # noqa: E402
from bmv2_target.live_ports import call_live  # noqa: E402
from bmv2_target.testing import Target  # noqa: E402

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, TenantEntry, Ternary  # noqa: E402
from sliceportal.traffic.packets import Encap, Flow, build  # noqa: E402
from sliceportal_p4rt.driver import Driver  # noqa: E402

pytestmark = pytest.mark.needs_root
OPTIONS: dict[str, Any] = {"access_ports": {1: 100}, "trunk_ports": [2], "uplink_port": 2}
SLOW_BPS = 8_000  # the ~190-byte test frame holds the link ~190 ms: a burst of 20 queues up


@pytest.fixture
def veths() -> Iterator[dict[int, tuple[str, str]]]:
    """port -> (the target's end, the test's end)."""
    tag = f"ln{os.getpid() % 10000}"
    ends = {p: (f"{tag}-{p}s", f"{tag}-{p}t") for p in (1, 2)}
    try:
        for s, t in ends.values():
            subprocess.run(["ip", "link", "add", s, "type", "veth", "peer", "name", t], check=True)
            for dev in (s, t):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"], check=False)
                subprocess.run(["ip", "link", "set", dev, "up"], check=True)
        yield ends
    finally:
        for s, _ in ends.values():
            subprocess.run(["ip", "link", "del", s], check=False, capture_output=True)


def _ir() -> RuleIR:
    t = TenantEntry(1, "t", 1001, 100)
    s = SliceEntry(1, 1, "s", 1001, 100, (3,))
    rule = Rule(Match(src_ip=Ternary.exact(0x0A000005, 32)), Action(1, 3, 0))
    return RuleIR(lanes=8, paths=1, rules=(rule,), slices=(s,), tenants=(t,))


MARK = b"sliceportal test_live_native".ljust(64, b".")  # the payload: our frames, and no one else's


def _frame() -> bytes:
    flow = Flow("10.0.0.5", "10.2.0.1", 5000, vni=1001, encap=Encap.VXLAN_GTP)
    return bytes(build(flow, MARK))


def _count(sock: socket.socket, settle_s: float) -> int:
    """Our frames received within ``settle_s``: a frame the kernel or anything else put on the
    link is not counted (CI once counted 21 of 20 with a raw count)."""
    n, deadline = 0, time.monotonic() + settle_s
    while time.monotonic() < deadline:
        try:
            frame, where = sock.recvfrom(65535)
        except BlockingIOError:
            time.sleep(0.01)
            continue
        n += where[2] != socket.PACKET_OUTGOING and MARK in frame
    return n


def _wait_status(address: str, done: Any, timeout_s: float = 10) -> dict[str, Any]:
    deadline = time.monotonic() + timeout_s
    while True:
        status = call_live(address, "Status")
        if done(status) or time.monotonic() > deadline:
            return status
        time.sleep(0.05)


def _start(veths: dict[int, tuple[str, str]]) -> tuple[Target, Driver, socket.socket, socket.socket]:
    target = Target(
        "--priority-queues",
        "8",
        "--queue-depth",
        "4",
        "--link-rate-bps",
        str(SLOW_BPS),
        *[a for p, (s, _) in veths.items() for a in ("-i", f"{p}@{s}")],
    )
    d = Driver({"address": target.address, **OPTIONS})
    d.apply(d.lower(_ir()), lambda e: None)
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((veths[1][1], 0))
    rx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    rx.bind((veths[2][1], 0))
    rx.setblocking(False)
    return target, d, tx, rx


def test_a_slow_link_queues_to_the_depth_tail_drops_the_rest_and_drains_when_lifted(
    veths: dict[int, tuple[str, str]],
) -> None:
    target, d, tx, rx = _start(veths)
    try:
        data = _frame()
        for _ in range(20):
            tx.send(data)
        # lane 3's queue holds 4, the rest is tail-dropped; the idle link (it banks 50 ms,
        # less than a frame) takes one at once, before or after the burst is queued
        status = _wait_status(target.address, lambda s: s["received"] >= 20 and s["drops_queue_full"] >= 15)
        queued = status["queued"]["2"]
        assert status["received"] == 20 and status["drops_queue_full"] in (15, 16), status
        assert queued[3] == sum(queued) >= 3 and status["transmitted"] <= 1, status
        assert status["transmitted"] + sum(queued) + status["drops_queue_full"] == 20, status
        assert status["link_rate_bps"] == SLOW_BPS
        # the link paces: over any window, at most a frame per frame time (~190 ms) and one it
        # banked. The window is measured, not assumed: a loaded machine stretches any sleep.
        seen_at = time.monotonic()
        time.sleep(0.3)
        later = call_live(target.address, "Status")["transmitted"]
        frame_s = len(data) * 8 / SLOW_BPS
        assert later - status["transmitted"] <= 1 + (time.monotonic() - seen_at) / frame_s, (later, status)
        lifted = call_live(target.address, "SetLinkRate", {"link_rate_bps": None})
        assert lifted["link_rate_bps"] is None
        sent = 20 - status["drops_queue_full"]
        status = _wait_status(target.address, lambda s: s["transmitted"] >= sent)
        assert status["transmitted"] == sent and sum(status["queued"]["2"]) == 0, status
        assert _count(rx, 1.0) == sent
    finally:
        tx.close()
        rx.close()
        d.close()
        target.stop()


def test_packets_queued_under_a_replaced_pipeline_are_never_sent(veths: dict[int, tuple[str, str]]) -> None:
    target, d, tx, rx = _start(veths)
    try:
        data = _frame()
        for _ in range(5):
            tx.send(data)
        status = _wait_status(target.address, lambda s: s["received"] >= 5 and sum(s["queued"].get("2", [0])) >= 3)
        assert sum(status["queued"]["2"]) >= 3, status
        # the controller pushes the pipeline again (SetForwardingPipelineConfig): the new
        # program starts with empty tables and must not egress the old one's packets
        session = d._connect()
        session.set_pipeline(d.p4info.proto, d.program.device_config, cookie=0x5EED)
        call_live(target.address, "SetLinkRate", {"link_rate_bps": None})
        status = _wait_status(target.address, lambda s: sum(s["queued"]["2"]) == 0)
        assert sum(status["queued"]["2"]) == 0, status
        assert status["stale_drops"] >= 2, status  # at most one more left at the old rate meanwhile
        assert status["transmitted"] + status["stale_drops"] + status["drops_queue_full"] == 5, status
        assert _count(rx, 0.5) == status["transmitted"]
    finally:
        tx.close()
        rx.close()
        d.close()
        target.stop()


def test_the_transmit_ring_wraps_and_loses_nothing(veths: dict[int, tuple[str, str]]) -> None:
    """The drain thread sends through a PACKET_MMAP ring of 1024 slots (2 MB): 3000 frames
    wrap it around three times; with fewer in flight than a queue holds, every frame
    arrives and none is refused by the kernel."""
    target = Target("--priority-queues", "8", *[a for p, (s, _) in veths.items() for a in ("-i", f"{p}@{s}")])
    d = Driver({"address": target.address, **OPTIONS})
    try:
        d.apply(d.lower(_ir()), lambda e: None)
        sent, got, _offered, _forwarded = offer_closed_loop(veths[1][1], veths[2][1], _frame(), 3000, 32, 2.0)
        status = _wait_status(target.address, lambda s: s["transmitted"] >= 3000)
        assert (sent, got) == (3000, 3000), (sent, got, status)
        # the switch's own count may include a frame the kernel sent on a veth (it counts every
        # frame it transmitted, not only ours): ours are counted by the receiver above
        assert status["transmitted"] >= 3000 and status["send_errors"] == 0, status
    finally:
        d.close()
        target.stop()
