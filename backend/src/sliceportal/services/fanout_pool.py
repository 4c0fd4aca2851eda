"""Work of one fan-out spread over processes, so it is not bound to one interpreter lock (#28 item 2).

A slice deploy to many backends is Python between network waits: in one process its threads
take turns at one interpreter lock, and the deploy is bounded by that process's CPU seconds
(``bench scale_backends``: ~15 ms a backend). Here the backends are split over *lanes*, each
a process of its own with its own database pool and driver sessions.

- **A backend always goes to the same lane** (its id modulo the lanes): the lane's driver
  session to it (a P4Runtime stream with mastership, what it last applied) is opened once and
  reused by every later fan-out, as the deploying process reuses its own (``backends.POOL``).
- **Lanes start on first use and stay** (idle, they cost memory only); what a lane runs is
  imported once, by the ``forkserver`` the lanes are forked from. A lane takes one fan-out's
  part at a time: a second fan-out from the same process queues behind it. A smaller fan-out
  stays in the deploying process's threads (``Lanes.min_items``, the ``fanout_min_backends``
  setting): lanes start, and open driver sessions of their own, at a cost. On this 2-core
  machine (where the bench's targets and database share the cores) lanes made a deploy to
  1 000 backends 27 s instead of 37 s, and one to 100 backends 4.0 s instead of 2.1 s the
  first time (2.5-2.9 against 2.2-3.2 s once started).
- **Progress** events travel back on one queue, tagged with their fan-out's token; a lane
  ends each piece of work with a marker after its last event, so the caller has every event
  before it returns.
- **Connection budget**: a lane drives ``core/db.BACKENDS_AT_ONCE`` backends at once, as the
  deploying process does, with two pooled connections each.
- A lane that dies (killed, out of memory) fails its fan-out's call with ``LaneDied``; its
  pushes' job rows are finished by the controller (``deployments.resume``), and the lane is
  started anew next time.
"""

from __future__ import annotations

import contextlib
import ctypes
import itertools
import logging
import multiprocessing
import os
import signal
import threading
from collections.abc import Callable, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from concurrent.futures.process import BrokenProcessPool
from dataclasses import dataclass, field
from multiprocessing.queues import SimpleQueue
from typing import Any, TypeVar

from sliceportal.core import gc_policy, stack_dumps

log = logging.getLogger(__name__)
_STOP = 0  # the token that ends the events' reader (a fan-out's tokens start at 1)
EVENTS_DRAIN_S = 30.0  # how long a caller waits for a lane's last events after its result

T = TypeVar("T")
Emit = Callable[[Any], None]  # a lane's progress callback: any picklable event
# what a lane runs: fn(*args, emit) -> results, module level (it is pickled by name)
LaneFn = Callable[..., list[T]]


@dataclass(frozen=True)
class Lanes:
    """How a caller spreads a fan-out: over ``processes`` lanes (0: one a core) once it has
    ``min_items`` items; 1 process: never (the caller's own threads)."""

    processes: int = 1
    min_items: int = 1

    @property
    def count(self) -> int:
        return self.processes or os.cpu_count() or 1

    def used_for(self, items: int) -> bool:
        return self.count > 1 and items >= self.min_items


NO_LANES = Lanes()


class LaneDied(RuntimeError):
    """A lane process ended while it held part of a fan-out."""


@dataclass
class _Listening:
    on_event: Callable[[Any], None] | None
    lanes_left: int
    done: threading.Event = field(default_factory=threading.Event)


class FanoutPool:
    """``lanes`` processes, started when first used; one pool per process (``pool()``)."""

    def __init__(self, lanes: int, preload: Sequence[str] = ()) -> None:
        """``preload``: modules the lanes' forkserver imports once, before it forks them."""
        self.lanes = lanes
        self._ctx = multiprocessing.get_context("forkserver")
        self._ctx.set_forkserver_preload(list(preload))
        self._lock = threading.Lock()
        self._executors: list[ProcessPoolExecutor | None] = [None] * lanes
        self._events: SimpleQueue[tuple[int, Any, bool]] | None = None
        self._listening: dict[int, _Listening] = {}
        self._tokens = itertools.count(1)

    def lane_of(self, key: int) -> int:
        return key % self.lanes

    def run(
        self,
        fn: LaneFn[T],
        work: Sequence[tuple[int, tuple[Any, ...]]],
        on_event: Callable[[Any], None] | None = None,
    ) -> list[list[T]]:
        """``fn(*args, emit)`` in lane ``lane`` for each ``(lane, args)`` of ``work`` (one item per
        lane at most), concurrently; their results in ``work``'s order. ``on_event`` gets what
        ``emit`` was given, in this process, before this returns."""
        token = next(self._tokens)
        listening = _Listening(on_event, len(work))
        with self._lock:
            self._listening[token] = listening
            futures: list[Future[list[T]]] = [
                self._executor(lane).submit(_in_lane, token, fn, args) for lane, args in work
            ]
        try:
            results = []
            for (lane, _), future in zip(work, futures, strict=True):
                try:
                    results.append(future.result())
                except BrokenProcessPool as exc:
                    self._drop(lane)
                    raise LaneDied(f"fan-out lane {lane} died: {exc}") from exc
            # each lane put its end marker after its last event, before its result
            if not listening.done.wait(EVENTS_DRAIN_S):
                raise LaneDied(f"fan-out events not drained within {EVENTS_DRAIN_S:.0f} s")
            return results
        finally:
            with self._lock:
                self._listening.pop(token, None)

    def pids(self) -> list[int]:
        """The lane processes running now (a bench counts their CPU as the portal's)."""
        with self._lock:
            executors = [e for e in self._executors if e is not None]
        return [pid for e in executors for pid in (e._processes or {})]  # no public accessor

    def shutdown(self) -> None:
        """End the lanes, and the thread reading their events (started again on next use)."""
        with self._lock:
            executors, self._executors = self._executors, [None] * self.lanes
            events, self._events = self._events, None
        for e in executors:
            if e is not None:
                e.shutdown(wait=True, cancel_futures=True)
        if events is not None:
            events.put((_STOP, None, True))

    def _executor(self, lane: int) -> ProcessPoolExecutor:
        """The lane's process (started now if it is not running); the caller holds ``_lock``."""
        if self._events is None:
            self._events = self._ctx.SimpleQueue()
            threading.Thread(target=self._read_events, args=(self._events,), name="fanout-events", daemon=True).start()
        executor = self._executors[lane]
        if executor is None:
            executor = self._executors[lane] = ProcessPoolExecutor(
                1, mp_context=self._ctx, initializer=_start_lane, initargs=(self._events,)
            )
        return executor

    def _drop(self, lane: int) -> None:
        with self._lock:
            executor, self._executors[lane] = self._executors[lane], None
        if executor is not None:
            executor.shutdown(wait=False, cancel_futures=True)

    def _read_events(self, events: SimpleQueue[tuple[int, Any, bool]]) -> None:
        while True:
            token, event, last = events.get()
            if token == _STOP:  # its lanes ended (shutdown): nothing more comes on this queue
                events.close()
                return
            with self._lock:
                listening = self._listening.get(token)
            if listening is None:  # its caller gave up (a lane died): nobody to tell
                continue
            if last:
                listening.lanes_left -= 1  # only this thread counts
                if listening.lanes_left == 0:
                    listening.done.set()
            elif listening.on_event is not None:
                try:
                    listening.on_event(event)
                except Exception:  # a caller's callback must not stop the events of every other
                    log.exception("fan-out progress callback failed")


_POOL: FanoutPool | None = None
_POOL_LOCK = threading.Lock()


def pool(lanes: int, preload: Sequence[str] = ()) -> FanoutPool:
    """This process's pool of ``lanes`` lanes (made again, after the old one's work, when the
    number changes)."""
    global _POOL
    with _POOL_LOCK:
        if _POOL is None or _POOL.lanes != lanes:
            if _POOL is not None:
                _POOL.shutdown()
            _POOL = FanoutPool(lanes, preload)
        return _POOL


def running_pids() -> list[int]:
    return _POOL.pids() if _POOL is not None else []


def shutdown() -> None:
    """End this process's lanes (their driver sessions with them), when it stops serving."""
    global _POOL
    with _POOL_LOCK:
        old, _POOL = _POOL, None
    if old is not None:
        old.shutdown()


# ---- in the lane process ----

_EVENTS: SimpleQueue[tuple[int, Any, bool]] | None = None
PR_SET_PDEATHSIG = 1


def _start_lane(events: SimpleQueue[tuple[int, Any, bool]]) -> None:
    global _EVENTS
    _EVENTS = events
    gc_policy.apply()
    stack_dumps.dump_stacks_on_signal()
    # A Ctrl-C at the terminal reaches the whole process group; the portal process shuts its
    # lanes down itself. Killed (-9), it cannot: its forkserver then exits, and this with it.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() == 1:  # the forkserver was gone before prctl: do not linger
        os._exit(0)


def _in_lane(token: int, fn: LaneFn[T], args: tuple[Any, ...]) -> list[T]:
    events = _EVENTS
    assert events is not None, "a lane's work runs in a process _start_lane began"
    try:
        return fn(*args, lambda event: events.put((token, event, False)))
    finally:
        events.put((token, None, True))
