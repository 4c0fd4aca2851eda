"""Where a data plane's per-rule counters belong: each rule's (slice, catalogue lane).

Drivers report monotonic counters per rule; each rule of the deployed IR carries its
slice and (target) lane, and the compile explanation maps target lanes back to the slice
type's catalogue lanes. So per-interval deltas per (slice, catalogue lane) are exact for
every driver that counts per rule, whatever the data plane's own queue layout
(``kpi.collector`` folds them so; the testbed places its flows with it).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

Place = tuple[int, int]  # (portal slice id, catalogue lane)


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
