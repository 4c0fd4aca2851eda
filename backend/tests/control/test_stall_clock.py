"""The stall clock measures the time its process could not run a thread."""

from __future__ import annotations

import sys
import time

from sliceportal.core.stall_clock import StallClock
from tests.factories import wait_until


def test_a_stall_of_the_process_is_measured_under_way_and_after() -> None:
    clock = StallClock(tick_s=0.02)
    started = time.monotonic()
    clock.start()
    wait_until("the clock ticking", lambda: clock._last_wake >= started + 0.02, 5)  # a first tick (start() sets it too)
    old = sys.getswitchinterval()
    sys.setswitchinterval(60.0)  # the GIL stays with this thread: the process's other threads stall
    try:
        began = time.monotonic()
        while time.monotonic() < began + 0.6:
            pass
        ended = time.monotonic()
        # the clock's thread has not run since: the stall under way counts already
        under_way = clock.stalled(began, ended)
    finally:
        sys.setswitchinterval(old)
    assert under_way >= 0.5
    # once its thread runs again, its record of the stall replaces that estimate
    wait_until("the clock ticking again", lambda: time.monotonic() > ended + 0.2, 5)
    assert 0.5 <= clock.stalled(began, ended) <= ended - began
    assert clock.stalled(began, began + 0.3) <= 0.3  # only the part of it inside the window
