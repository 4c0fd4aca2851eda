"""Where a data plane puts each testbed flow: the rule set it holds, applied to the flow's headers.

The meter at a backend's egress groups what it receives by *place*: the (slice, lane) the
data plane gave the packets. The place of a flow on a backend is the decision of the rule
set that backend holds (the last deployment that finished there, which reconcile keeps the
data plane equal to) under ``RuleIR.classify`` — the reference semantics every data plane
is tested against — not the slice the generator meant. A flow whose slice is not in that
rule set (a draft, a slice rolled back or deleted) misses and lands where the data plane's
miss path puts it: place ``(DEFAULT_SLICE, target lane)``, reported as that backend's
default traffic, never as the slice's KPIs.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from pydantic import TypeAdapter

from sliceportal.drivers.contract import Counters
from sliceportal.kpi.counters import rule_places
from sliceportal.rules.ir import RuleIR
from sliceportal.traffic.scenarios import ScenarioFlow

DEFAULT_SLICE = 0  # portal slice ids start at 1: 0 is "no slice's rule matched"
_IR = TypeAdapter(RuleIR)


def load_ir(ir: Mapping[str, Any]) -> RuleIR:
    """A stored rule set's IR (``RuleIR.to_json``) as the object that classifies."""
    return _IR.validate_python(dict(ir))


def flow_places(
    ir: Mapping[str, Any] | None, explanation: Mapping[str, Any] | None, flows: Iterable[ScenarioFlow]
) -> dict[int, tuple[int, int]]:
    """flow id -> (portal slice id or DEFAULT_SLICE, lane) on a backend holding ``ir``.

    A hit's lane is the slice type's catalogue lane (as the slice's KPIs are keyed); a
    miss's lane is the data plane's own (target) lane. With no rule set at all (nothing
    deployed yet) every flow is default traffic on lane 0.
    """
    if ir is None:
        return {sf.flow_id: (DEFAULT_SLICE, 0) for sf in flows}
    rules = load_ir(ir)
    places = rule_places(ir, explanation or {})
    out: dict[int, tuple[int, int]] = {}
    for sf in flows:
        decision = rules.classify(sf.flow.key())
        hit = places.get(decision.rule_index) if decision.rule_index is not None else None
        out[sf.flow_id] = hit if hit is not None else (DEFAULT_SLICE, decision.lane)
    return out


def expected_hits(ir: Mapping[str, Any] | None, flows: Iterable[ScenarioFlow]) -> tuple[frozenset[int], bool]:
    """The data-plane slice ids (``Action.slice_id``) these flows hit under ``ir``, and
    whether any of them misses: what the data plane's own counters must show if it holds
    ``ir`` (a cross-check of the placement against the data plane)."""
    if ir is None:
        return frozenset(), True
    rules = load_ir(ir)
    hits, miss = set(), False
    for sf in flows:
        decision = rules.classify(sf.flow.key())
        if decision.rule_index is None:
            miss = True
        else:
            hits.add(decision.slice_id)
    return frozenset(hits), miss


def counted_hits(before: Counters, now: Counters) -> tuple[frozenset[int], bool]:
    """What a data plane counted between two reads of its counters: the data-plane slice ids
    that took packets, and whether its miss path did (``expected_hits``'s other side)."""
    hit = frozenset(
        sid for sid, c in now.slices.items() if c.packets > (before.slices[sid].packets if sid in before.slices else 0)
    )
    return hit, now.misses.packets > before.misses.packets
