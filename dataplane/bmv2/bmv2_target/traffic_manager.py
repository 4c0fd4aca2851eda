"""The traffic manager between ingress and egress: per egress port, ``priority_queues``
strict-priority FIFOs drained by a link of fixed rate, on the packets' own clock.

As BMv2's simple_switch: a packet whose standard_metadata.priority is not below the
number of queues the switch was started with is dropped ("Priority out of range"),
priority 7 is the highest (BMv2 puts priority p in queue n-1-p and serves queue 0 first),
and a full queue (``queue_depth`` packets, BMv2's default 64) tail-drops.

:class:`TrafficManager` runs on the packets' own clock (pcap replay, ``Switch.run``); the
same queueing on live ports, on the wall clock, is the engine's (``engine/src/lanes.rs``,
run by native threads in ``live.rs``).
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field

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
    # (dequeue ns: egress runs then, so deq_timedelta is the sojourn in the queue as on
    # BMv2; departure ns: the last bit left; port; packet)
    deliver: Callable[[int, int, int, InFlight], None]
    ports: dict[int, PortQueues] = field(default_factory=dict)
    drops_out_of_range: int = 0
    drops_queue_full: int = 0

    def enqueue(self, now_ns: int, f: InFlight) -> None:
        if f.priority >= self.priority_queues:
            self.drops_out_of_range += 1
            return
        if self.link_bps is None:
            self.deliver(now_ns, now_ns, f.egress_port, f)
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
                self.deliver(start, done, port_no, f)

    def flush(self) -> None:
        self.advance(1 << 62)
