"""Background loops that survive their failures, and the liveness record ``/health`` shows.

Every periodic job of the portal (reconciler, KPI collector / writer, traffic, health
probes) runs as a :class:`SupervisedLoop`: one iteration per period; an iteration that
raises is logged and retried with exponential backoff (a database blip must not end the
loop); a thread that dies anyway is restarted by the next :meth:`LoopRegistry.check`.
The registry is per process and holds facts only: when each loop last succeeded, its
last error, how many iterations failed in a row.
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import ClassVar

log = logging.getLogger(__name__)

# A failed iteration is retried after 0.5, 1, 2, 2 ... s, never later than the loop's own
# period: the loops must pick up within 5 s of the database's return (issues #19, #26), and on
# a loaded host the retry itself may take a second or two before it gets the CPU.
FIRST_RETRY_S = 0.5
MAX_BACKOFF_S = 2.0
ITERATION_GRACE_S = 120.0


@dataclass
class LoopStatus:
    name: str
    period_s: float
    started_at: datetime = field(default_factory=lambda: datetime.now(UTC))
    last_success: datetime | None = None
    last_error: str = ""
    last_error_at: datetime | None = None
    consecutive_failures: int = 0
    restarts: int = 0
    busy_since: datetime | None = None  # the iteration under way started then (None: waiting)

    def alive(self, now: datetime | None = None) -> bool:
        """Succeeded within three periods (plus the backoff it is allowed), or just started, or is
        in an iteration that began after it last succeeded and has run for less than
        ``ITERATION_GRACE_S`` (a reconcile repairing thousands of entries takes a while)."""
        now = now or datetime.now(UTC)
        since = self.last_success or self.started_at
        if (now - since).total_seconds() <= 3 * self.period_s + MAX_BACKOFF_S:
            return True
        return self.busy_since is not None and (now - self.busy_since).total_seconds() <= ITERATION_GRACE_S


class SupervisedLoop:
    """Runs ``step`` every ``period_s`` seconds in a daemon thread until stopped."""

    def __init__(
        self, name: str, period_s: float, step: Callable[[], object], registry: LoopRegistry | None = None
    ) -> None:
        self.name, self.period_s, self._step = name, period_s, step
        self.status = LoopStatus(name, period_s)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        # start() and the registry's restart of a dead thread decide under this lock: without it,
        # a check() between start()'s creating and starting the thread saw a "dead" loop and
        # started a second thread on the same step (the CI log of a loaded host, issue #26)
        self._life = threading.Lock()
        self._registry = registry or LOOPS
        self._registry.add(self)

    def start(self) -> None:
        with self._life:
            self._start()

    def _start(self) -> None:
        self._stop.clear()
        thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        thread.start()
        self._thread = thread

    def restart_if_dead(self) -> bool:
        """Start the loop again when its thread ended although nobody stopped it; True if it did."""
        with self._life:
            if self.stopped or self._thread is None or self._thread.is_alive():
                return False
            self.status.restarts += 1
            log.error("loop %s died; restarting it (restart %d)", self.name, self.status.restarts)
            self._start()
            return True

    def stop(self, timeout_s: float | None = None) -> None:
        with self._life:  # a restart under way must not clear it again
            self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout_s if timeout_s is not None else self.period_s + 5)
        self._registry.discard(self)

    @property
    def running(self) -> bool:
        return self._thread is not None and self._thread.is_alive()

    @property
    def stopped(self) -> bool:
        return self._stop.is_set()

    def run_once(self) -> bool:
        """One iteration, with the failure recorded instead of raised; True when it succeeded."""
        self.status.busy_since = datetime.now(UTC)
        try:
            self._step()
        except Exception as exc:  # the loop outlives any one iteration's failure
            st = self.status
            st.busy_since = None
            st.consecutive_failures += 1
            st.last_error, st.last_error_at = f"{type(exc).__name__}: {exc}"[:500], datetime.now(UTC)
            log.warning(
                "loop %s: iteration failed (%d in a row): %s",
                self.name,
                st.consecutive_failures,
                st.last_error,
                exc_info=st.consecutive_failures == 1,
            )
            return False
        self.status.last_success, self.status.consecutive_failures = datetime.now(UTC), 0
        self.status.busy_since = None
        return True

    def _delay(self) -> float:
        n = self.status.consecutive_failures
        return self.period_s if n == 0 else min(self.period_s, MAX_BACKOFF_S, FIRST_RETRY_S * 2 ** min(n - 1, 10))

    def _run(self) -> None:
        next_at = time.monotonic()
        while not self._stop.is_set():
            self.run_once()
            next_at = (
                max(next_at + self._delay(), time.monotonic())
                if self.status.consecutive_failures == 0
                else time.monotonic() + self._delay()
            )
            self._stop.wait(max(0.0, next_at - time.monotonic()))


class LoopRegistry:
    def __init__(self) -> None:
        self._loops: dict[str, SupervisedLoop] = {}
        self._lock = threading.Lock()

    def add(self, loop: SupervisedLoop) -> None:
        with self._lock:
            self._loops[loop.name] = loop

    def discard(self, loop: SupervisedLoop) -> None:
        with self._lock:
            if self._loops.get(loop.name) is loop:
                del self._loops[loop.name]

    def check(self) -> None:
        """Restart every loop whose thread died although nobody stopped it."""
        with self._lock:
            loops = list(self._loops.values())
        for loop in loops:
            loop.restart_if_dead()

    def get(self, name: str) -> SupervisedLoop | None:
        with self._lock:
            return self._loops.get(name)

    def statuses(self) -> list[LoopStatus]:
        with self._lock:
            return [loop.status for loop in self._loops.values()]


LOOPS = LoopRegistry()


class PeriodicDuty(ABC):
    """A duty of the leader (reconciler, health probes, job resumer, KPI collector): ``run_once``
    every period in a ``SupervisedLoop`` that ``start`` makes -- not ``__init__``: an instance
    used only for ``run_once`` (tests, one-off passes) is no loop."""

    loop_name: ClassVar[str]

    def __init__(self, period_s: float, registry: LoopRegistry | None = None) -> None:
        self._period_s, self._registry = period_s, registry
        self._loop: SupervisedLoop | None = None

    @abstractmethod
    def run_once(self) -> object:
        """One pass; what it returns is for direct callers, the loop drops it."""

    def start(self) -> None:
        self._loop = SupervisedLoop(self.loop_name, self._period_s, self.run_once, self._registry)
        self._loop.start()

    def stop(self) -> None:
        if self._loop is not None:
            self._loop.stop()
