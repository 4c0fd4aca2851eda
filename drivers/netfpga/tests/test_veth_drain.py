"""The model as a live card with a wall-clock drain (``--live-drain-mbps``): frames offered
above the drain rate fill the RTL's queues, and its strict-priority lanes decide who is
dropped — the top lane keeps everything, the best-effort lane loses the excess."""

from __future__ import annotations

import os
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.sendrecv import AsyncSniffer, sendp

from sliceportal.traffic.packets import Flow, build_bytes, parse_payload, payload
from sliceportal_netfpga import simulator
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.experiment import table2_ir

PAYLOAD = 900  # + headers: ~950-byte frames, 30 beats of 32 B (a queue of 64 beats holds 2)
DRAIN_MBPS = 1.0  # ~130 frames/s
OFFERED = 120  # frames, sent at ~260 frames/s: every 4th on lane 3 (~65/s, fits), the rest on lane 0


@pytest.fixture
def veths() -> Iterator[tuple[str, str]]:
    tag = f"{os.getpid() % 100000}"
    pairs = [(f"ndi{tag}a", f"ndi{tag}b"), (f"ndo{tag}a", f"ndo{tag}b")]
    try:
        for a, b in pairs:
            subprocess.run(["ip", "link", "add", a, "type", "veth", "peer", "name", b], check=True)
            for n in (a, b):
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{n}.disable_ipv6=1"], check=False)
                subprocess.run(["ip", "link", "set", n, "up"], check=True)
        yield pairs[0][0], pairs[1][0]
    finally:
        for a, _ in pairs:
            subprocess.run(["ip", "link", "del", a], check=False, capture_output=True)


@pytest.mark.needs_root
def test_an_overloaded_drain_drops_the_lowest_lane(sim_binary: Path, tmp_path: Path, veths: tuple[str, str]) -> None:
    wire, host = veths
    sim = simulator.start(tmp_path / "s.sock", "--veth-in", wire[:-1] + "b", "--veth-out", host[:-1] + "b",
                          "--live-drain-mbps", str(DRAIN_MBPS), binary=sim_binary)
    driver = Driver({"address": sim.address})
    try:
        driver.apply(driver.lower(table2_ir(1)), lambda _: None)
        top, low = Flow("10.0.0.5", "10.255.0.1", 5000 + 8 * 3), Flow("10.0.0.6", "10.255.0.1", 5000)
        frames = [build_bytes(top if i % 4 == 0 else low, payload(i, 0, 0, PAYLOAD)) for i in range(OFFERED)]
        sniffer = AsyncSniffer(iface=host, store=True)
        sniffer.start()
        time.sleep(0.3)
        sendp(frames, iface=wire, verbose=False, inter=1 / 260)
        time.sleep(1.0)  # the queues drain at the wall-clock rate
        sniffer.stop()
        got = [parse_payload(bytes(p)[-PAYLOAD:]) for p in sniffer.results or []]
        seqs = {g[0] for g in got if g is not None}  # the frame's index is its payload's flow id
        top_sent = {i for i in range(OFFERED) if i % 4 == 0}
        low_sent = set(range(OFFERED)) - top_sent
        assert top_sent <= seqs, f"lane 3 lost {sorted(top_sent - seqs)}"
        low_lost = 100 * len(low_sent - seqs) / len(low_sent)
        assert low_lost >= 30, f"lane 0 lost only {low_lost:.0f} %: the drain did not hold the link"
        c = driver.counters()
        assert sum(c.lanes["0/0"].drops.values()) > 0 and not sum(c.lanes["0/3"].drops.values()), c.lanes
    finally:
        driver.close()
        sim.stop()
