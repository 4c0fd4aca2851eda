"""The model as a live card with a wall-clock drain (``--live-drain-mbps``): frames offered
above the drain rate fill the RTL's queues, and its strict-priority lanes decide who is
dropped — the top lane keeps everything, the best-effort lane loses the excess."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import pytest
from scapy.packet import Packet
from scapy.sendrecv import AsyncSniffer, sendp

from sliceportal.traffic.packets import Flow, build_bytes, parse_payload, payload
from sliceportal_netfpga.experiment import table2_ir

from .conftest import live_card

BIG, SMALL = 900, 64  # payloads: ~950-byte frames are 30 beats of 32 B (a queue of 64 beats holds
# 2); ~130-byte frames are 5 beats
DRAIN_MBPS = 1.0  # ~130 big frames/s
OFFERED = 120  # frames sent as one burst: every 10th small on lane 3 (12 x 5 beats: the lane's queue
# holds them all even if the card reads the burst at once), the rest big on lane 0 (~8x the drain).
# A burst, not a paced stream: on a loaded host a pacing sender falls below the drain rate, and a
# starved reader turns any pacing into bursts anyway.
TOP = {i for i in range(OFFERED) if i % 10 == 0}


@pytest.mark.needs_root
def test_an_overloaded_drain_drops_the_lowest_lane(sim_binary: Path, tmp_path: Path, veths: tuple[str, str]) -> None:
    wire, host = veths
    with live_card(sim_binary, tmp_path, veths, "--live-drain-mbps", str(DRAIN_MBPS)) as driver:
        driver.apply(driver.lower(table2_ir(1)), lambda _: None)
        top, low = Flow("10.0.0.5", "10.255.0.1", 5000 + 8 * 3), Flow("10.0.0.6", "10.255.0.1", 5000)
        frames = [
            build_bytes(top, payload(i, 0, 0, SMALL)) if i in TOP else build_bytes(low, payload(i, 0, 0, BIG))
            for i in range(OFFERED)
        ]
        got: list[bytes] = []
        last_rx = [0.0]

        def received(p: Packet) -> None:
            got.append(bytes(p))
            last_rx[0] = time.monotonic()

        listening = threading.Event()
        sniffer = AsyncSniffer(iface=host, store=False, prn=received, started_callback=listening.set)
        sniffer.start()
        assert listening.wait(10), "the sniffer did not start"
        t0 = time.monotonic()
        sendp(frames, iface=wire, verbose=False)
        top_sent, low_sent = TOP, set(range(OFFERED)) - TOP

        def seqs() -> set[int]:  # the frame's index is its payload's flow id
            found = (parse_payload(f[-BIG:]) or parse_payload(f[-SMALL:]) for f in list(got))
            return {g[0] for g in found if g is not None}

        # The queues drain at the wall-clock rate; a loaded host only makes that slower.
        deadline = time.monotonic() + 15
        while not top_sent <= seqs() and time.monotonic() < deadline:
            time.sleep(0.1)
        sniffer.stop()
        c = driver.counters()
        assert top_sent <= seqs(), f"lane 3 lost {sorted(top_sent - seqs())}; lane 3 counters {c.lanes['0/3']}"
        # The drain held the link: no more left than its wall-clock rate allows over the time the
        # frames took (plus its 2-frame credit), however fast or slow this host ran the burst.
        ours = [f for f in got if parse_payload(f[-BIG:]) or parse_payload(f[-SMALL:])]
        allowed = DRAIN_MBPS * 1e6 / 8 * (last_rx[0] - t0) + 2 * 1518 + len(frames[1])
        assert sum(map(len, ours)) <= allowed, (sum(map(len, ours)), allowed)
        assert low_sent - seqs(), "lane 0 lost nothing: the burst did not overload the drain"
        assert sum(c.lanes["0/0"].drops.values()) > 0 and not sum(c.lanes["0/3"].drops.values()), c.lanes
