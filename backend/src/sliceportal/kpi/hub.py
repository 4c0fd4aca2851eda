"""Live KPI fan-out: stored points go to every open stream, filtered per tenant.

Producers (the collector thread) publish from any thread; each subscriber is an asyncio
queue on the server's event loop. A slow subscriber loses its oldest points rather than
holding up the others.
"""

from __future__ import annotations

import asyncio
import threading
from dataclasses import dataclass, field

from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.totals import LaneTotals


@dataclass(eq=False)
class Subscription:
    tenant_scope: int | None  # None: every tenant's points
    slice_ids: frozenset[int] | None
    loop: asyncio.AbstractEventLoop
    queue: asyncio.Queue[list[KpiPoint]] = field(default_factory=lambda: asyncio.Queue(maxsize=256))
    dropped: int = 0

    def offer(self, points: list[KpiPoint]) -> None:
        if self.queue.full():
            self.queue.get_nowait()
            self.dropped += 1
        self.queue.put_nowait(points)


class KpiHub:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._subs: set[Subscription] = set()
        self.totals = LaneTotals()  # every point published, for /metrics' counters

    def subscribe(self, tenant_scope: int | None, slice_ids: frozenset[int] | None) -> Subscription:
        sub = Subscription(tenant_scope, slice_ids, asyncio.get_running_loop())
        with self._lock:
            self._subs.add(sub)
        return sub

    def unsubscribe(self, sub: Subscription) -> None:
        with self._lock:
            self._subs.discard(sub)

    def publish(self, points: list[KpiPoint], tenant_of: dict[int, int]) -> None:
        """``tenant_of`` maps each point's slice to its tenant (the filter is enforced here)."""
        self.totals.add(points)
        with self._lock:
            subs = list(self._subs)
        for sub in subs:
            mine = [
                p
                for p in points
                if (sub.tenant_scope is None or tenant_of.get(p.slice_id) == sub.tenant_scope)
                and (sub.slice_ids is None or p.slice_id in sub.slice_ids)
            ]
            if mine:
                sub.loop.call_soon_threadsafe(sub.offer, mine)

    @property
    def subscribers(self) -> int:
        with self._lock:
            return len(self._subs)
