"""The live ports' traffic manager: strict priority and tail drop on the wall clock (the
queueing of ``Switch.run``'s TrafficManager, drained by a thread per port)."""

from __future__ import annotations

import itertools
import sys
import threading
import time
from pathlib import Path

# --import-mode=importlib puts dataplane/bmv2 on no path; the target's package lives there
if str(Path(__file__).resolve().parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bmv2_target.pipeline import InFlight
from bmv2_target.traffic_manager import LiveTrafficManager


def _pkt(priority: int, port: int = 2, size: int = 1000) -> InFlight:
    return InFlight(
        data=bytes(size),
        parsed=None,
        egress_port=port,
        priority=priority,  # type: ignore[arg-type]
        slice_id=0,
        tenant_vid=0,
        ecn_ip=-1,
    )


def test_overloaded_link_serves_the_highest_priority_first_and_tail_drops() -> None:
    sent: list[int] = []
    done = threading.Event()

    def transmit(port: int, f: InFlight) -> None:
        sent.append(f.priority)
        if len(sent) == 1 + 2 * 4:
            done.set()

    # 1000-byte frames at 80 kbit/s: one frame per 100 ms, so the whole burst below is
    # queued long before the link frees after the first frame
    tm = LiveTrafficManager(priority_queues=8, queue_depth=4, link_bps=80_000, transmit=transmit)
    try:
        assert tm.enqueue(_pkt(0))  # goes at once: the link was idle
        time.sleep(0.02)
        for _ in range(6):  # 6 into a queue of 4: 2 tail-dropped per lane
            tm.enqueue(_pkt(0))
            tm.enqueue(_pkt(6))
        assert not tm.enqueue(_pkt(8)), "priority >= priority_queues drops (BMv2: out of range)"
        assert tm.drops_queue_full == 4 and tm.drops_out_of_range == 1
        tm.set_link_bps(None)  # lift the cap: the rest drains at once, still in priority order
        assert done.wait(5), sent
        assert sent == [0, 6, 6, 6, 6, 0, 0, 0, 0]
    finally:
        tm.stop()


def test_the_link_rate_paces_departures_in_wall_time() -> None:
    stamps: list[float] = []
    tm = LiveTrafficManager(8, 64, 800_000, lambda port, f: stamps.append(time.monotonic()))  # 10 ms/frame
    try:
        for _ in range(5):
            tm.enqueue(_pkt(3))
        deadline = time.monotonic() + 5
        while len(stamps) < 5 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(stamps) == 5
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        assert min(gaps) >= 0.009, gaps  # never faster than the link (a loaded machine may be slower)
    finally:
        tm.stop()
