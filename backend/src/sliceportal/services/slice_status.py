"""A slice's state on each backend it is assigned to, derived from facts, never stored.

Deployment state — from the deployments and rule sets of the backend:

- ``draft``: the slice was never in a rule set a deployment to this backend put in force;
- ``pending``: it is in force, but compiling the configuration now gives the slice other
  entries than the rule set in force holds (``changes`` says which);
- ``deployed``: in force as compiled now (rule set N, since the push that put N in force);
- ``out_of_sync``: in force, but the last reconcile read back something else (the diff is
  ``Backend.sync_detail``);
- ``failed``: not in force, and the last push to the backend failed;
- ``not_deployed``: not in force although an earlier rule set carried it (after a rollback).

SLA state — from the KPI samples and violations of (slice, backend): ``no_data`` when no
sample arrived in the last ``no_data_after`` intervals, ``degraded`` while a violation is
open, else ``met``.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.dialects.postgresql import distinct_on
from sqlalchemy.orm import Session

from sliceportal.models import Backend, Deployment, DeploymentKind, DeploymentStatus, KpiSample, RuleSet, SlaViolation
from sliceportal.models.slicing import Slice
from sliceportal.rules.compiler import compile_rules, intent_ref_of
from sliceportal.rules.errors import CompileError
from sliceportal.rules.ir import FIELD_WIDTHS, MissMode, MissPolicy
from sliceportal.rules.spec import TargetSpec
from sliceportal.services.deployments import current_rule_set, domain_specs


class DeployState(StrEnum):
    DRAFT = "draft"
    PENDING = "pending"
    DEPLOYED = "deployed"
    OUT_OF_SYNC = "out_of_sync"
    FAILED = "failed"
    NOT_DEPLOYED = "not_deployed"


class SlaState(StrEnum):
    MET = "met"
    DEGRADED = "degraded"
    NO_DATA = "no_data"


# The slice's one-word summary over its backends: the state needing attention first wins.
SUMMARY_ORDER = ("failed", "out_of_sync", "pending", "not_deployed", "degraded", "deployed", "draft")
PUSHES = (DeploymentKind.DEPLOY, DeploymentKind.ROLLBACK)


@dataclass
class BackendStatus:
    backend_id: int
    backend_name: str
    state: DeployState
    detail: str
    rule_set_number: int | None = None
    since: datetime | None = None
    changes: list[str] = field(default_factory=list)
    sync_state: str = "unknown"
    sync_detail: dict[str, Any] = field(default_factory=dict)
    synced_at: datetime | None = None
    sla: SlaState = SlaState.NO_DATA
    open_violations: list[SlaViolation] = field(default_factory=list)
    last_sample_at: datetime | None = None


def summary(statuses: Sequence[BackendStatus]) -> str:
    """One word for a slice: its most urgent backend state (``degraded`` for a deployed slice
    whose SLA is broken); ``draft`` without backends."""
    words = {("degraded" if s.state == DeployState.DEPLOYED and s.sla == SlaState.DEGRADED else s.state.value)
             for s in statuses}
    return next((w for w in SUMMARY_ORDER if w in words), "draft")


# ---- what the backend holds for a slice, and what compiling now would give it --------------

def _canonical(value: Any) -> Any:
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
    return json.dumps(_canonical({"match": r["match"], "lane": r["action"]["lane"], "rr_path": r["action"]["rr_path"]}),
                      sort_keys=True)


def slice_parts(ir: dict[str, Any]) -> dict[int, SlicePart]:
    """Every slice's footprint in one rule-set IR, by slice ref, in one pass over it: entries
    are keyed by (ref, intent_ref), never by position, so a sub-slice listed before its
    parent is still the intent's. A ref without its own entry is not carried (left out)."""
    owner: dict[int, tuple[int, int | None]] = {}  # dense id -> (ref, intent ref or None)
    entries: dict[int, dict[int | None, dict[str, Any]]] = defaultdict(dict)
    for e in ir.get("slices", []):
        key = e.get("intent_ref")
        owner[e["slice_id"]] = (e["ref"], key)
        entries[e["ref"]][key] = _canonical({k: v for k, v in e.items() if k not in ("slice_id", "intent_ref")})
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


def _entries(n: int) -> str:
    return f"{n} classifier entr{'y' if n == 1 else 'ies'}"


def _rule_changes(now: list[str], held: list[str]) -> list[str]:
    added = len(set(now) - set(held))
    removed = len(set(held) - set(now))
    if not (added or removed):
        return []
    return [f"classifier entries: {added} to add, {removed} to remove ({len(held)} in force, {len(now)} after a push)"]


def _entry_changes(now: dict[str, Any], held: dict[str, Any]) -> list[str]:
    out = []
    for key in sorted(set(now) | set(held)):
        a, b = held.get(key), now.get(key)
        if isinstance(a, dict) and isinstance(b, dict):
            out += [f"{key}.{k}: {a.get(k)} → {b.get(k)}" for k in sorted(set(a) | set(b)) if a.get(k) != b.get(k)]
        elif a != b:
            out.append(f"{key}: {a} → {b}")
    return out


def _policer(entry: dict[str, Any] | None) -> str | None:
    """What a sub-slice's policer does, in the intent's words (None: no sub-slice)."""
    if entry is None:
        return None
    rate = (entry.get("qos") or {}).get("rate_bps")
    return "drop" if rate == 0 else f"rate_limit {(rate or 0) / 1e6:g} Mbit/s"


def _policer_change(was: str | None, will: str | None) -> str:
    if was is not None and will is not None and was.startswith("rate_limit") and will.startswith("rate_limit"):
        return f"{was} → {will.removeprefix('rate_limit ')}"  # "rate_limit 5 Mbit/s → 4 Mbit/s"
    return f"{was or 'no policer'} → {will or 'no policer'}"


def _without_policer(entry: dict[str, Any] | None) -> dict[str, Any]:
    """A sub-slice's entry less what ``_policer`` names (its rate) and its name, which is
    derived from the slice's name, the intent id and the action, each reported on its own."""
    if entry is None:
        return {}
    qos = {k: v for k, v in (entry.get("qos") or {}).items() if k != "rate_bps"}
    return {k: v for k, v in entry.items() if k != "name"} | {"qos": qos}


def _intent_changes(ref: int, now: Footprint | None, held: Footprint | None) -> list[str]:
    """What differs for one intent, named by its id and what its policer does."""
    part = now or held
    assert part is not None
    what = _policer(part.entry)
    label = f"intent {ref}" + (f" ({what})" if what else "")
    if held is None:
        return [f"{label}: not in force yet ({_entries(len(part.rules))})"]
    if now is None:
        return [f"{label}: removed since the push, still in force ({_entries(len(part.rules))})"]
    out = []
    was, will = _policer(held.entry), _policer(now.entry)
    if was != will:
        out.append(f"intent {ref}: {_policer_change(was, will)}")
        label = f"intent {ref}"
    out += [f"{label}: {c}" for c in _entry_changes(_without_policer(now.entry), _without_policer(held.entry))]
    out += [f"{label}: {c}" for c in _rule_changes(now.rules, held.rules)]
    return out


def changes(now: SlicePart | None, held: SlicePart) -> list[str]:
    """What differs between the slice as compiled now and as the rule set in force holds it:
    its own entry and rules, then each of its intents (added, removed or changed)."""
    if now is None:
        return ["the slice compiles to no entries now"]
    own_now, own_held = now[None], held[None]
    out = _entry_changes(own_now.entry or {}, own_held.entry or {}) + _rule_changes(own_now.rules, own_held.rules)
    for ref in sorted(k for k in set(now) | set(held) if k is not None):
        out += _intent_changes(ref, now.get(ref), held.get(ref))
    return out


def _target_of(ir: dict[str, Any]) -> TargetSpec:
    """The target a stored IR was compiled for: its geometry and miss policy as stored, and
    the match fields its rules use (the driver's full list needs the driver, which a status
    read must not lock; a field the target has but no rule used is not compared)."""
    used = {name for r in ir.get("rules", []) for name, t in r["match"].items() if t is not None}
    miss = ir.get("miss") or {}
    return TargetSpec(lanes=ir["lanes"], paths=ir["paths"], match_fields=frozenset(used & FIELD_WIDTHS.keys()),
                      miss=MissPolicy(mode=MissMode(miss.get("mode", MissMode.ALGORITHM1)),
                                      lane=miss.get("lane", 0), rr_path=miss.get("rr_path", 0)))


def _compiled_now(session: Session, backend: Backend, in_force: RuleSet) -> dict[str, Any] | str:
    """The IR compiling the configuration now would give, for the target ``in_force`` was
    compiled for; or why it cannot be compiled."""
    try:
        tenants, specs, _ = domain_specs(session, backend)
        compiled: dict[str, Any] = _canonical(compile_rules(tenants, specs, _target_of(in_force.ir)).ir.to_json())
        return compiled
    except CompileError as exc:
        return f"the configuration does not compile now: {exc}"


# ---- per backend ----------------------------------------------------------------------------

@dataclass
class _BackendFacts:
    backend: Backend
    in_force: RuleSet | None
    in_force_since: datetime | None
    last_push: Deployment | None
    ever: set[int]  # slice refs of every rule set a push ever put in force here
    compiled: dict[str, Any] | str | None = None  # lazily: compiled now
    # lazily, each IR indexed once for all the slices of a listing (not one scan per slice)
    held_parts: dict[int, SlicePart] | None = None
    now_parts: dict[int, SlicePart] | None = None

    def compiled_now(self, session: Session) -> dict[str, Any] | str:
        if self.compiled is None:
            assert self.in_force is not None
            self.compiled = _compiled_now(session, self.backend, self.in_force)
        return self.compiled

    def held(self, ref: int) -> SlicePart | None:
        if self.in_force is None:
            return None
        if self.held_parts is None:
            self.held_parts = slice_parts(self.in_force.ir)
        return self.held_parts.get(ref)

    def now(self, session: Session, ref: int) -> SlicePart | str | None:
        """The slice as compiling now gives it, or why the configuration does not compile."""
        compiled = self.compiled_now(session)
        if isinstance(compiled, str):
            return compiled
        if self.now_parts is None:
            self.now_parts = slice_parts(compiled)
        return self.now_parts.get(ref)


def _facts(session: Session, backend: Backend) -> _BackendFacts:
    in_force = current_rule_set(session, backend.id)
    put_in_force = session.scalar(
        select(Deployment).where(Deployment.backend_id == backend.id, Deployment.kind.in_(PUSHES),
                                 Deployment.status == DeploymentStatus.SUCCEEDED)
        .order_by(Deployment.id.desc()).limit(1))
    last_push = session.scalar(
        select(Deployment).where(Deployment.backend_id == backend.id, Deployment.kind.in_(PUSHES),
                                 Deployment.status != DeploymentStatus.RUNNING)
        .order_by(Deployment.id.desc()).limit(1))
    ever = set(session.scalars(text(
        "SELECT DISTINCT (e->>'ref')::bigint FROM rule_set, jsonb_array_elements(rule_set.ir->'slices') e "
        "WHERE rule_set.id IN (SELECT rule_set_id FROM deployment WHERE backend_id = :b AND status = :ok)"),
        {"b": backend.id, "ok": DeploymentStatus.SUCCEEDED.value}))
    since = None
    if put_in_force is not None:
        since = put_in_force.finished_at or put_in_force.created_at
    return _BackendFacts(backend, in_force, since, last_push, ever)


def _deploy_state(session: Session, s: Slice, f: _BackendFacts) -> BackendStatus:
    b = f.backend
    st = BackendStatus(backend_id=b.id, backend_name=b.name, state=DeployState.DRAFT, detail="",
                       sync_state=b.sync_state, sync_detail=dict(b.sync_detail or {}), synced_at=b.synced_at)
    held = f.held(s.id)
    if f.in_force is not None and held is not None:
        st.rule_set_number, st.since = f.in_force.number, f.in_force_since
        if b.sync_state == "out_of_sync":
            st.state = DeployState.OUT_OF_SYNC
            st.detail = f"reconcile found the data plane differs from rule set {f.in_force.number}"
            return st
        now = f.now(session, s.id)
        diff = [now] if isinstance(now, str) else changes(now, held)
        if diff:
            st.state, st.changes = DeployState.PENDING, diff
            st.detail = f"changed since rule set {f.in_force.number} was pushed; deploy to apply"
        else:
            st.state = DeployState.DEPLOYED
            st.detail = f"in force as rule set {f.in_force.number}"
        return st
    if f.last_push is not None and f.last_push.status == DeploymentStatus.FAILED:
        st.state = DeployState.FAILED
        st.detail = f"the last push (deployment {f.last_push.id}) failed: {f.last_push.error}"
    elif s.id in f.ever:
        st.state = DeployState.NOT_DEPLOYED
        number = f.in_force.number if f.in_force is not None else None
        st.rule_set_number = number
        st.detail = (f"rule set {number} in force does not carry it" if number is not None
                     else "no rule set is in force on this backend")
    else:
        st.detail = "never pushed to this backend"
    return st


def _sla(session: Session, statuses: dict[int, list[BackendStatus]], now: datetime, no_data_after: int) -> None:
    slice_ids = list(statuses)
    newest = {(sid, bid): (ts, interval) for sid, bid, ts, interval in session.execute(
        select(KpiSample.slice_id, KpiSample.backend_id, KpiSample.ts, KpiSample.interval_s)
        .ext(distinct_on(KpiSample.slice_id, KpiSample.backend_id))
        .where(KpiSample.slice_id.in_(slice_ids), KpiSample.ts > now - timedelta(hours=1))
        .order_by(KpiSample.slice_id, KpiSample.backend_id, KpiSample.ts.desc()))}
    open_by: dict[tuple[int, int], list[SlaViolation]] = defaultdict(list)
    for v in session.scalars(select(SlaViolation).where(SlaViolation.slice_id.in_(slice_ids),
                                                        SlaViolation.ended_at.is_(None))
                             .order_by(SlaViolation.started_at)):
        open_by[(v.slice_id, v.backend_id)].append(v)
    for sid, entries in statuses.items():
        for st in entries:
            key = (sid, st.backend_id)
            st.open_violations = open_by.get(key, [])
            last = newest.get(key)
            st.last_sample_at = last[0] if last else None
            if last is None or last[0] < now - timedelta(seconds=no_data_after * last[1]):
                st.sla = SlaState.NO_DATA
            elif st.open_violations:
                st.sla = SlaState.DEGRADED
            else:
                st.sla = SlaState.MET


def slice_statuses(session: Session, slices: Sequence[Slice], now: datetime,
                   no_data_after: int) -> dict[int, list[BackendStatus]]:
    """Every slice's status on each backend it is assigned to (ordered by backend id)."""
    facts: dict[int, _BackendFacts] = {}
    out: dict[int, list[BackendStatus]] = {}
    for s in slices:
        entries = []
        for b in sorted(s.backends, key=lambda x: x.id):
            if b.id not in facts:
                facts[b.id] = _facts(session, b)
            entries.append(_deploy_state(session, s, facts[b.id]))
        out[s.id] = entries
    if out:
        _sla(session, out, now, no_data_after)
    return out
