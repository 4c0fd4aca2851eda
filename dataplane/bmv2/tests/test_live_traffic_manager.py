"""The live ports' traffic manager: strict priority and tail drop on the wall clock (the
queueing of ``Switch.run``'s TrafficManager, drained by a thread per port)."""

from __future__ import annotations

import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path

# --import-mode=importlib puts dataplane/bmv2 on no path; the target's package lives there
if str(Path(__file__).resolve().parent.parent) not in sys.path:
    sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bmv2_target.traffic_manager import CATCH_UP_S, LiveTrafficManager


@dataclass
class Frame:  # what the traffic manager reads of the pipeline's packet
    priority: int
    egress_port: int
    data: bytes


def _pkt(priority: int, port: int = 2, size: int = 1000) -> Frame:
    return Frame(priority, port, bytes(size))


def test_overloaded_link_serves_the_highest_priority_first_and_tail_drops() -> None:
    sent: list[int] = []
    done = threading.Event()

    def transmit(port: int, f: Frame) -> None:
        sent.append(f.priority)
        if len(sent) == 1 + 2 * 4:
            done.set()

    # 1000-byte frames at 80 kbit/s: one frame per 100 ms, so the whole burst below is
    # queued long before the link frees after the first frame
    tm: LiveTrafficManager[Frame] = LiveTrafficManager(8, 4, 80_000, transmit)
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
    # 1000-byte frames at 800 kbit/s: 10 ms each; the link may run CATCH_UP_S ahead of the
    # wall clock (a drain thread that waited for a CPU catches up), never more
    tm: LiveTrafficManager[Frame] = LiveTrafficManager(8, 64, 800_000, lambda port, f: stamps.append(time.monotonic()))
    try:
        start = time.monotonic()
        for _ in range(20):
            tm.enqueue(_pkt(3))
        deadline = time.monotonic() + 5
        while len(stamps) < 20 and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(stamps) == 20
        assert stamps[-1] - start >= 19 * 0.010 - CATCH_UP_S - 0.001, stamps[-1] - start
    finally:
        tm.stop()
