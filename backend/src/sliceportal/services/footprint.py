"""A slice's footprint in a rule set, and its digest (issue #28): pure, no database.

A footprint is what a rule-set IR holds for one slice (its entry and rules, and each of its
intents'); its digest is equal for two IRs exactly when ``slice_status.changes`` finds
nothing between them. ``slice_status`` reports with these; ``footprint_refresh`` stores them
when a push completes or a configuration changes.
"""

from __future__ import annotations

import hashlib
import json
from collections import defaultdict
from dataclasses import dataclass
from typing import Any

from sliceportal.rules.compiler import intent_ref_of
from sliceportal.rules.ir import FIELD_WIDTHS, MissMode


def canonical(value: Any) -> Any:
    return json.loads(json.dumps(value, sort_keys=True, default=str))


@dataclass(frozen=True)
class Footprint:
    """One part of a slice in a rule set: its entry (without the dense data-plane id, which
    shifts when other slices come and go) and its rules (match + lane + path, as sorted
    canonical JSON). An intent without a sub-slice (prioritise / steer) has rules only."""

    entry: dict[str, Any] | None
    rules: list[str]


# A slice's whole footprint: None -> the slice's own entry and rules; an intent id -> that
# intent's sub-slice (rate_limit / drop) and the rules compiled from it.
SlicePart = dict[int | None, Footprint]


def _rule_text(r: dict[str, Any]) -> str:
    return json.dumps(
        canonical({"match": r["match"], "lane": r["action"]["lane"], "rr_path": r["action"]["rr_path"]}), sort_keys=True
    )


def slice_parts(ir: dict[str, Any]) -> dict[int, SlicePart]:
    """Every slice's footprint in one rule-set IR, by slice ref, in one pass over it: entries
    are keyed by (ref, intent_ref), never by position, so a sub-slice listed before its
    parent is still the intent's. A ref without its own entry is not carried (left out)."""
    owner: dict[int, tuple[int, int | None]] = {}  # dense id -> (ref, intent ref or None)
    entries: dict[int, dict[int | None, dict[str, Any]]] = defaultdict(dict)
    for e in ir.get("slices", []):
        key = e.get("intent_ref")
        owner[e["slice_id"]] = (e["ref"], key)
        entries[e["ref"]][key] = canonical({k: v for k, v in e.items() if k not in ("slice_id", "intent_ref")})
    rules: dict[int, dict[int | None, list[str]]] = defaultdict(lambda: defaultdict(list))
    for r in ir.get("rules", []):
        o = owner.get(r["action"]["slice_id"])
        if o is not None:
            # a prioritise / steer intent's rules keep the slice's id: its note names the intent
            ref, key = o[0], (o[1] if o[1] is not None else intent_ref_of(r.get("note", "")))
            rules[ref][key].append(_rule_text(r))
    out: dict[int, SlicePart] = {}
    for ref, own in entries.items():
        if None not in own:
            continue
        keys = set(own) | set(rules[ref])
        out[ref] = {k: Footprint(own.get(k), sorted(rules[ref].get(k, []))) for k in keys}
    return out


def policer(entry: dict[str, Any] | None) -> str | None:
    """What a sub-slice's policer does, in the intent's words (None: no sub-slice)."""
    if entry is None:
        return None
    rate = (entry.get("qos") or {}).get("rate_bps")
    return "drop" if rate == 0 else f"rate_limit {(rate or 0) / 1e6:g} Mbit/s"


def without_policer(entry: dict[str, Any] | None) -> dict[str, Any]:
    """A sub-slice's entry less what ``policer`` names (its rate) and its name, which is
    derived from the slice's name, the intent id and the action, each reported on its own."""
    if entry is None:
        return {}
    qos = {k: v for k, v in (entry.get("qos") or {}).items() if k != "rate_bps"}
    return {k: v for k, v in entry.items() if k != "name"} | {"qos": qos}


def target_json(ir: dict[str, Any]) -> dict[str, Any]:
    """The target a stored IR was compiled for: its geometry and miss policy as stored, and
    the match fields its rules use (the driver's full list needs the driver, which a status
    read must not lock; a field the target has but no rule used is not compared)."""
    used = {name for r in ir.get("rules", []) for name, t in r["match"].items() if t is not None}
    miss = ir.get("miss") or {}
    return {
        "lanes": ir["lanes"],
        "paths": ir["paths"],
        "match_fields": sorted(used & FIELD_WIDTHS.keys()),
        "miss": {
            "mode": str(miss.get("mode", MissMode.ALGORITHM1)),
            "lane": miss.get("lane", 0),
            "rr_path": miss.get("rr_path", 0),
        },
    }


ABSENT = "absent"  # the wanted digest of a slice that compiles to no entries


def strip_none(entry: dict[str, Any]) -> dict[str, Any]:
    """An entry less what ``_entry_changes`` cannot tell from a missing key (None values, at
    the top and one level down), so that equal digests mean no change to report."""
    return {
        k: ({kk: vv for kk, vv in v.items() if vv is not None} if isinstance(v, dict) else v)
        for k, v in entry.items()
        if v is not None
    }


def footprint_digest(part: SlicePart | None) -> str:
    """A slice's footprint as one digest: equal digests exactly when ``changes`` finds nothing
    (the same projection: own entry and rule set; per intent its policer as named, its entry
    less the policer and name, its rule set)."""
    if part is None:
        return ABSENT
    own = part[None]
    projection = {
        "entry": strip_none(own.entry or {}),
        "rules": sorted(set(own.rules)),
        "intents": {
            str(k): {
                "policer": policer(p.entry),
                "entry": strip_none(without_policer(p.entry)),
                "rules": sorted(set(p.rules)),
            }
            for k, p in part.items()
            if k is not None
        },
    }
    return hashlib.sha256(json.dumps(projection, sort_keys=True, default=str).encode()).hexdigest()[:32]


def ir_footprint(rule_set_id: int, ir: dict[str, Any]) -> dict[str, Any]:
    """What a rule set holds, as the row ``rule_set_footprint`` stores."""
    return {
        "rule_set_id": rule_set_id,
        "digests": {str(ref): footprint_digest(p) for ref, p in slice_parts(ir).items()},
        "refs": sorted({int(e["ref"]) for e in ir.get("slices", []) if "ref" in e}),
        "target": target_json(ir),
    }
