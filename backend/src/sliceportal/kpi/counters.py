"""Data-plane counters into KPI samples: drops by reason and ECN marks per backend, slice and lane.

Drivers report monotonic counters per rule; each rule of the deployed IR carries its
slice and (target) lane, and the compile explanation maps target lanes back to the slice
type's catalogue lanes. So per-interval deltas per (slice, catalogue lane) are exact for
every driver that counts per rule, whatever the data plane's own queue layout.

The collector reaches the data planes through what its caller gives it (``ReadCounters``: the
testbed or the controller passes the shared driver pool), so the KPI layer imports no
services.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy.orm import Session

from sliceportal.drivers.contract import Counters, DriverError, LaneCounters
from sliceportal.models import Backend
from sliceportal.models.queries import current_rule_set

Place = tuple[int, int]  # (portal slice id, catalogue lane)
# one reading of a backend's counters; raises DriverError when its data plane cannot answer
ReadCounters = Callable[[Session, Backend], Counters]


@dataclass
class DropTotals:
    drops: dict[str, int] = field(default_factory=dict)
    ecn_marks: int = 0


def rule_places(ir: Mapping[str, Any], explanation: Mapping[str, Any]) -> dict[int, Place]:
    """Rule index -> (slice id, catalogue lane) for a stored rule set."""
    ref_of = {s["slice_id"]: s["ref"] for s in ir.get("slices", [])}
    catalogue_lane: dict[tuple[int, int], int] = {}
    for s in explanation.get("slices", []):
        for cat, target in s.get("lane_map", []):
            catalogue_lane.setdefault((s["ref"], target), cat)  # several folded together: the first
    places = {}
    for i, rule in enumerate(ir.get("rules", [])):
        ref = ref_of.get(rule["action"]["slice_id"])
        if ref is not None and (ref, rule["action"]["lane"]) in catalogue_lane:
            places[i] = (ref, catalogue_lane[(ref, rule["action"]["lane"])])
    return places


def _delta(now: LaneCounters, before: LaneCounters | None) -> tuple[dict[str, int], int]:
    old_drops = before.drops if before else {}
    drops = {k: v - old_drops.get(k, 0) for k, v in now.drops.items() if v - old_drops.get(k, 0) > 0}
    return drops, now.ecn_marks - (before.ecn_marks if before else 0)


class CounterCollector:
    """Polls every deployed backend's counters; ``collect`` returns the interval's deltas."""

    def __init__(self, read_counters: ReadCounters) -> None:
        self._read_counters = read_counters
        self._previous: dict[int, Counters] = {}
        # per backend, the last interval's packets per data-plane slice id and on the miss path
        self.slice_packets: dict[int, tuple[dict[int, int], int]] = {}

    def collect(self, session: Session, backends: list[Backend]) -> dict[int, dict[Place, DropTotals]]:
        """backend id -> (slice, lane) -> the interval's drops and ECN marks on that backend."""
        out: dict[int, dict[Place, DropTotals]] = {}
        for backend in backends:
            totals: dict[Place, DropTotals] = defaultdict(DropTotals)
            rule_set = current_rule_set(session, backend.id)
            if rule_set is None:
                continue
            try:
                now = self._read_counters(session, backend)
            except DriverError:
                continue
            before = self._previous.get(backend.id)
            self._previous[backend.id] = now
            if before is None:
                continue  # the first reading is the baseline
            self.slice_packets[backend.id] = (
                {
                    sid: c.packets - (before.slices[sid].packets if sid in before.slices else 0)
                    for sid, c in now.slices.items()
                },
                now.misses.packets - before.misses.packets,
            )
            for index, place in rule_places(rule_set.ir, rule_set.explanation).items():
                counters = now.rules.get(index)
                if counters is None:
                    continue
                drops, ecn = _delta(counters, before.rules.get(index))
                entry = totals[place]
                for reason, n in drops.items():
                    entry.drops[reason] = entry.drops.get(reason, 0) + n
                entry.ecn_marks += max(0, ecn)
            out[backend.id] = dict(totals)
        return out
