"""A slice's state on each backend it is assigned to, derived from facts.

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

"Compiling now" is not done on every read (issue #28): a slice's footprint is compared as
digests (``footprint_digest``), the held one stored once per rule set, the wanted one stored
per backend and recomputed only when the footprint generations of the backend's slices or
its rule set in force changed (``services/footprint_state.py``, migration 0015). Only
``detail`` (``GET /slices/{id}/status``) compiles, to say what a push would change.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from enum import StrEnum
from typing import Any

from sqlalchemy import select, text
from sqlalchemy.orm import Session

from sliceportal.models import Backend, DeploymentKind, DeploymentStatus, KpiSample, RuleSet, SlaViolation
from sliceportal.models.slicing import Slice
from sliceportal.rules.errors import CompileError
from sliceportal.rules.ir import MissMode, MissPolicy
from sliceportal.rules.spec import TargetSpec
from sliceportal.services import footprint_state as state
from sliceportal.services.compile_inputs import SharedCompiles
from sliceportal.services.footprint import (
    ABSENT,
    Footprint,
    SlicePart,
    canonical,
    footprint_digest,
    ir_footprint,
    policer,
    slice_parts,
    without_policer,
)


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
    words = {
        ("degraded" if s.state == DeployState.DEPLOYED and s.sla == SlaState.DEGRADED else s.state.value)
        for s in statuses
    }
    return next((w for w in SUMMARY_ORDER if w in words), "draft")


# ---- what a push would change (footprints and digests: services/footprint.py) ---------------


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


def _policer_change(was: str | None, will: str | None) -> str:
    if was is not None and will is not None and was.startswith("rate_limit") and will.startswith("rate_limit"):
        return f"{was} → {will.removeprefix('rate_limit ')}"  # "rate_limit 5 Mbit/s → 4 Mbit/s"
    return f"{was or 'no policer'} → {will or 'no policer'}"


def _intent_changes(ref: int, now: Footprint | None, held: Footprint | None) -> list[str]:
    """What differs for one intent, named by its id and what its policer does."""
    part = now or held
    assert part is not None
    what = policer(part.entry)
    label = f"intent {ref}" + (f" ({what})" if what else "")
    if held is None:
        return [f"{label}: not in force yet ({_entries(len(part.rules))})"]
    if now is None:
        return [f"{label}: removed since the push, still in force ({_entries(len(part.rules))})"]
    out = []
    was, will = policer(held.entry), policer(now.entry)
    if was != will:
        out.append(f"intent {ref}: {_policer_change(was, will)}")
        label = f"intent {ref}"
    out += [f"{label}: {c}" for c in _entry_changes(without_policer(now.entry), without_policer(held.entry))]
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


def _target_from(t: dict[str, Any]) -> TargetSpec:
    miss = t["miss"]
    return TargetSpec(
        lanes=t["lanes"],
        paths=t["paths"],
        match_fields=frozenset(t["match_fields"]),
        miss=MissPolicy(mode=MissMode(miss["mode"]), lane=miss["lane"], rr_path=miss["rr_path"]),
    )


def _compiled_now(
    session: Session, backend: Backend, target: dict[str, Any], input_key: str, shared: SharedCompiles
) -> dict[str, Any] | str:
    """The IR compiling the configuration now would give, for ``target`` (``target_json`` of
    the rule set in force); or why it cannot be compiled. ``input_key``: read before."""
    try:
        compiled: dict[str, Any] = canonical(
            shared.compiled(session, backend, input_key, _target_from(target)).ir.to_json()
        )
        return compiled
    except CompileError as exc:
        return f"the configuration does not compile now: {exc}"


def _wanted_now(
    session: Session,
    backend: Backend,
    rule_set_id: int,
    target: dict[str, Any],
    input_key: str,
    shared: SharedCompiles,
) -> state.Wanted:
    """Compile the backend's configuration now (for the target of the rule set in force) and
    keep each slice's digest: once per change of what the backend's slices compile from, and
    once for all the backends of a page or a refresh that carry the same slices (``shared``)."""
    compiled = _compiled_now(session, backend, target, input_key, shared)
    if isinstance(compiled, str):
        return state.Wanted(rule_set_id, input_key, {}, compiled)
    return state.Wanted(
        rule_set_id, input_key, {str(ref): footprint_digest(p) for ref, p in slice_parts(compiled).items()}, ""
    )


# ---- per backend ----------------------------------------------------------------------------


@dataclass
class _BackendFacts:
    backend: Backend
    stored: state.Stored
    wanted: state.Wanted | None  # None: nothing in force, nothing to compare
    # for ``changes`` only, lazily: the rule set in force and the configuration, each indexed once
    held_parts: dict[int, SlicePart] | None = None
    now_parts: dict[int, SlicePart] | str | None = None

    def detail(self, session: Session, ref: int) -> list[str]:
        """What a push would change for slice ``ref`` (compiles: asked for, never listed)."""
        assert self.stored.in_force is not None
        if self.held_parts is None:
            ir = session.scalar(select(RuleSet.ir).where(RuleSet.id == self.stored.in_force.rule_set_id))
            self.held_parts = slice_parts(ir or {})
        if self.now_parts is None:
            compiled = _compiled_now(session, self.backend, self.stored.target, self.stored.input_key, SharedCompiles())
            self.now_parts = compiled if isinstance(compiled, str) else slice_parts(compiled)
        if isinstance(self.now_parts, str):
            return [self.now_parts]
        held = self.held_parts.get(ref)
        return changes(self.now_parts.get(ref), held) if held is not None else []


def _facts(
    session: Session, backends: Sequence[Backend], slice_ids: Sequence[int], computed: list[int] | None = None
) -> dict[int, _BackendFacts]:
    """The stored facts of every backend of a page, in one statement; a footprint not stored
    yet (a rule set not read before, a configuration changed since) is computed once and stored
    (normally by the controller first: services/footprint_refresh.py), its backend added to
    ``computed``."""
    ids = [b.id for b in backends]
    found = state.stored(session, ids, slice_ids)
    missing = sorted({rs for st in found.values() for rs in st.unindexed})
    if missing:  # once per rule set: its IR is read and indexed, then the facts read again
        state.store_rule_set_footprints(
            session,
            [
                ir_footprint(rs, ir)
                for rs, ir in session.execute(select(RuleSet.id, RuleSet.ir).where(RuleSet.id.in_(missing)))
            ],
        )
        found = state.stored(session, ids, slice_ids)
    out = {}
    shared = SharedCompiles()
    fresh: dict[int, state.Wanted] = {}
    for b in backends:
        st = found[b.id]
        w = None
        if st.in_force is not None and st.indexed:
            w = st.wanted
            # the key was read before compiling: a change after it only leaves the row stale
            if w is None or w.rule_set_id != st.in_force.rule_set_id or w.input_key != st.input_key:
                w = fresh[b.id] = _wanted_now(session, b, st.in_force.rule_set_id, st.target, st.input_key, shared)
                if computed is not None:
                    computed.append(b.id)
        out[b.id] = _BackendFacts(b, st, w)
    state.store_wanted(session, fresh)
    return out


def refresh_wanted(session: Session, backends: Sequence[Backend]) -> list[int]:
    """Compute and store the wanted digests of each of ``backends`` whose stored ones are stale
    (what a read would otherwise compute); the ids of those computed."""
    computed: list[int] = []
    _facts(session, backends, [], computed)
    return computed


def _deploy_state(session: Session, s: Slice, f: _BackendFacts, detail: bool) -> BackendStatus:
    b = f.backend
    st = BackendStatus(
        backend_id=b.id,
        backend_name=b.name,
        state=DeployState.DRAFT,
        detail="",
        sync_state=b.sync_state,
        sync_detail=dict(b.sync_detail or {}),
        synced_at=b.synced_at,
    )
    stored = f.stored
    in_force = stored.in_force
    held = stored.held.get(str(s.id))
    if in_force is not None and held is not None and f.wanted is not None:
        st.rule_set_number, st.since = in_force.number, in_force.since
        if b.sync_state == "out_of_sync":
            st.state = DeployState.OUT_OF_SYNC
            st.detail = f"reconcile found the data plane differs from rule set {in_force.number}"
            return st
        if f.wanted.error or f.wanted.wanted.get(str(s.id), ABSENT) != held:
            st.state = DeployState.PENDING
            st.changes = [f.wanted.error] if f.wanted.error else (f.detail(session, s.id) if detail else [])
            st.detail = f"changed since rule set {in_force.number} was pushed; deploy to apply"
        else:
            st.state = DeployState.DEPLOYED
            st.detail = f"in force as rule set {in_force.number}"
        return st
    if stored.last_push is not None and stored.last_push.status == DeploymentStatus.FAILED:
        st.state = DeployState.FAILED
        st.detail = f"the last push (deployment {stored.last_push.deployment_id}) failed: {stored.last_push.error}"
    elif s.id in stored.ever:
        st.state = DeployState.NOT_DEPLOYED
        number = in_force.number if in_force is not None else None
        st.rule_set_number = number
        st.detail = (
            f"rule set {number} in force does not carry it"
            if number is not None
            else "no rule set is in force on this backend"
        )
    else:
        st.detail = "never pushed to this backend"
    return st


_NEWEST = text(
    "SELECT k.s, k.b, x.ts, x.interval_s FROM unnest(CAST(:s AS bigint[]), CAST(:b AS bigint[])) AS k(s, b) "
    f"CROSS JOIN LATERAL (SELECT ts, interval_s FROM {KpiSample.__tablename__} "
    "WHERE slice_id = k.s AND backend_id = k.b AND ts > :since ORDER BY ts DESC LIMIT 1) AS x"
)


def _sla(session: Session, statuses: dict[int, list[BackendStatus]], now: datetime, no_data_after: int) -> None:
    slice_ids = list(statuses)
    pairs = [(sid, st.backend_id) for sid, entries in statuses.items() for st in entries]
    # the newest sample of each (slice, backend) by the (slice, backend, ts) index, one probe a
    # pair: a DISTINCT ON over the hour sorted every sample of it (every lane and source: 170 000
    # rows and 150 ms a read for one slice on three backends with an hour of 1 s samples)
    newest = {
        (sid, bid): (ts, interval)
        for sid, bid, ts, interval in session.execute(
            _NEWEST, {"s": [p[0] for p in pairs], "b": [p[1] for p in pairs], "since": now - timedelta(hours=1)}
        )
    }
    open_by: dict[tuple[int, int], list[SlaViolation]] = defaultdict(list)
    for v in session.scalars(
        select(SlaViolation)
        .where(SlaViolation.slice_id.in_(slice_ids), SlaViolation.ended_at.is_(None))
        .order_by(SlaViolation.started_at)
    ):
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


def slice_statuses(
    session: Session, slices: Sequence[Slice], now: datetime, no_data_after: int, *, detail: bool = False
) -> dict[int, list[BackendStatus]]:
    """Every slice's status on each backend it is assigned to (ordered by backend id), from
    stored state in a fixed number of statements. ``detail``: also what a push would change
    (``changes`` of a pending slice), which compiles the backend's configuration."""
    backends = {b.id: b for s in slices for b in s.backends}
    facts = _facts(session, [backends[i] for i in sorted(backends)], [s.id for s in slices]) if backends else {}
    out = {
        s.id: [_deploy_state(session, s, facts[b.id], detail) for b in sorted(s.backends, key=lambda x: x.id)]
        for s in slices
    }
    if any(out.values()):  # a slice on no backend has no SLA state to read
        _sla(session, out, now, no_data_after)
    return out
