"""The traffic manager between ingress and egress: per egress port, ``priority_queues``
strict-priority FIFOs drained by a link of fixed rate, on the packets' own clock.

As BMv2's simple_switch: a packet whose standard_metadata.priority is not below the
number of queues the switch was started with is dropped ("Priority out of range"),
priority 7 is the highest (BMv2 puts priority p in queue n-1-p and serves queue 0 first),
and a full queue (``queue_depth`` packets, BMv2's default 64) tail-drops.

:class:`TrafficManager` runs on the packets' own clock (pcap replay, ``Switch.run``);
:class:`LiveTrafficManager` is the same queueing on live ports, on the wall clock.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Generic, Protocol, TypeVar

from .pipeline import InFlight


@dataclass
class PortQueues:
    queues: list[deque[tuple[int, InFlight]]]  # index = priority
    link_free_ns: int = 0


@dataclass
class TrafficManager:
    priority_queues: int
    queue_depth: int
    link_bps: int | None  # None: the link is never the bottleneck
    deliver: Callable[[int, int, InFlight], None]  # (departure ns, port, packet)
    ports: dict[int, PortQueues] = field(default_factory=dict)
    drops_out_of_range: int = 0
    drops_queue_full: int = 0

    def enqueue(self, now_ns: int, f: InFlight) -> None:
        if f.priority >= self.priority_queues:
            self.drops_out_of_range += 1
            return
        if self.link_bps is None:
            self.deliver(now_ns, f.egress_port, f)
            return
        port = self.ports.get(f.egress_port)
        if port is None:
            port = PortQueues([deque() for _ in range(self.priority_queues)])
            self.ports[f.egress_port] = port
        q = port.queues[f.priority]
        if len(q) >= self.queue_depth:
            self.drops_queue_full += 1
            return
        q.append((now_ns, f))

    def advance(self, now_ns: int) -> None:
        """Transmit whatever the links finish starting before ``now_ns``."""
        assert self.link_bps is not None or not self.ports
        for port_no, port in self.ports.items():
            while True:
                heads = [q[0][0] for q in port.queues if q]
                if not heads:
                    break
                start = max(port.link_free_ns, min(heads))
                if start > now_ns:
                    break
                # Highest priority among the packets already queued when the link frees.
                for q in reversed(port.queues):
                    if q and q[0][0] <= start:
                        _, f = q.popleft()
                        break
                assert self.link_bps is not None
                done = start + len(f.data) * 8 * 1_000_000_000 // self.link_bps
                port.link_free_ns = done
                self.deliver(done, port_no, f)

    def flush(self) -> None:
        self.advance(1 << 62)


CATCH_UP_S = 0.05


class Queued(Protocol):
    """What the live traffic manager needs of a packet (the pipeline's InFlight has it)."""

    @property
    def priority(self) -> int: ...
    @property
    def egress_port(self) -> int: ...
    @property
    def data(self) -> bytes: ...


P = TypeVar("P", bound=Queued)


class LiveTrafficManager(Generic[P]):
    """Live ports: the same per-port strict-priority queues as :class:`TrafficManager`
    (priority not below ``priority_queues`` drops, a full queue tail-drops), drained by one
    thread per egress port at ``link_bps`` on the wall clock, so the queues, not the CPU,
    decide who loses when a link is overloaded.

    The link is a transmitter: when it frees, the highest-priority packet queued at that
    instant goes, and the next choice waits until its bytes would have left at
    ``link_bps`` (None: it never waits). ``transmit`` runs the egress pipeline and sends.
    The rate can change while packets flow (the testbed's congestion scenario lowers it).
    """

    def __init__(
        self,
        priority_queues: int,
        queue_depth: int,
        link_bps: int | None,
        transmit: Callable[[int, P], None],  # (egress port, packet)
    ) -> None:
        self.priority_queues, self.queue_depth, self.link_bps = priority_queues, queue_depth, link_bps
        self._transmit = transmit
        self._cv = threading.Condition()
        self._ports: dict[int, list[deque[P]]] = {}
        self._stop = False
        self.drops_out_of_range = 0
        self.drops_queue_full = 0
        self.transmitted = 0

    def enqueue(self, f: P) -> bool:
        """Queue a packet for its egress port; False when it was dropped (counted)."""
        with self._cv:
            if f.priority >= self.priority_queues:
                self.drops_out_of_range += 1
                return False
            queues = self._ports.get(f.egress_port)
            if queues is None:
                queues = self._ports[f.egress_port] = [deque() for _ in range(self.priority_queues)]
                threading.Thread(
                    target=self._drain, args=(f.egress_port, queues), daemon=True, name=f"tm-port{f.egress_port}"
                ).start()
            q = queues[f.priority]
            if len(q) >= self.queue_depth:
                self.drops_queue_full += 1
                return False
            q.append(f)
            self._cv.notify_all()
            return True

    def set_link_bps(self, link_bps: int | None) -> None:
        with self._cv:
            self.link_bps = link_bps
            self._cv.notify_all()

    def depths(self) -> dict[int, list[int]]:
        """Packets queued now, per egress port and priority."""
        with self._cv:
            return {port: [len(q) for q in queues] for port, queues in self._ports.items()}

    def stop(self) -> None:
        with self._cv:
            self._stop = True
            self._cv.notify_all()

    def _drain(self, port: int, queues: list[deque[P]]) -> None:
        link_free = time.monotonic()
        while True:
            with self._cv:
                while True:
                    if self._stop:
                        return
                    now = time.monotonic()
                    if now < link_free:  # the previous frame is still on the wire
                        self._cv.wait(link_free - now)
                        continue
                    f = next((q.popleft() for q in reversed(queues) if q), None)
                    if f is not None:
                        break
                    self._cv.wait()
                rate = self.link_bps
                # a drain thread that waited for a CPU may catch up for CATCH_UP_S (the link
                # keeps its rate on a loaded machine), but an idle link banks no more than that
                link_free = max(link_free, now - CATCH_UP_S) + (len(f.data) * 8 / rate if rate else 0.0)
            self._transmit(port, f)
            self.transmitted += 1
