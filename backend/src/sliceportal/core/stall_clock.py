"""How long this process itself could not run: a thread that wakes every ``tick_s`` and notes
each wake-up that came late.

A timeout measured on the wall clock blames whoever did not answer, but on a host at load
40 the answer may have sat unread in our own socket while our threads waited for a CPU or
for the GIL (CI saw a live NetFPGA model declared down that way: three 5 s probes timed out
while the model itself answered raw register reads within 0.2 s). A late wake-up of this
clock's thread is time the process could not have read an answer either; the health probes
subtract it from a probe's time before they count its silence (``services/health_probe.py``).
"""

from __future__ import annotations

import threading
import time
from collections import deque

TICK_S = 0.05
LATE_S = 0.02  # a wake-up later than this is a stall (sleep overshoot is ~0.1 ms)
KEEP_S = 300.0  # stalls older than this are forgotten (a probe's window is seconds)


class StallClock:
    def __init__(self, tick_s: float = TICK_S) -> None:
        self._tick = tick_s
        self._stalls: deque[tuple[float, float]] = deque()  # (began, ended), monotonic
        self._last_wake = time.monotonic()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None

    def start(self) -> None:
        """Idempotent: one clock thread per process."""
        with self._lock:
            if self._thread is not None and self._thread.is_alive():
                return
            self._last_wake = time.monotonic()
            self._thread = threading.Thread(target=self._run, name="stall-clock", daemon=True)
            self._thread.start()

    def _run(self) -> None:
        while True:
            due = self._last_wake + self._tick
            time.sleep(self._tick)
            now = time.monotonic()
            with self._lock:
                if now - due > LATE_S:
                    self._stalls.append((due, now))
                while self._stalls and self._stalls[0][1] < now - KEEP_S:
                    self._stalls.popleft()
                self._last_wake = now

    def stalled(self, since: float, until: float) -> float:
        """Seconds of [since, until] (monotonic) this process was stalled, counting a stall
        still under way (the clock's thread late right now)."""
        with self._lock:
            spans = list(self._stalls)
            running = self._thread is not None and self._thread.is_alive()
            overdue = self._last_wake + self._tick + LATE_S
        if running and until > overdue:
            spans.append((overdue - LATE_S, until))
        return sum(max(0.0, min(end, until) - max(began, since)) for began, end in spans)


STALLS = StallClock()
