"""Transactional push and reconcile, pure of the database (docs/architecture.md, "A deploy, end to end", steps 3-6).

The lead's deployment service calls, per backend:

* ``plan_for(driver, ir)``: capabilities check + ``lower`` + capacity check. Everything that
  does not fit raises here, before a single write (``CapacityError`` carries needed /
  available).
* ``push(driver, plan, progress)``: read back, diff, ``apply`` (all-or-nothing in the
  driver), verify by read-back. Failures never raise: the ``PushOutcome`` says what
  happened, whether the data plane was returned to the previous version, and why.
* ``diff_tables(old, new)``: per-table added / removed / modified entries, for deployment
  diffs and for drift reports.
* ``reconcile_once(driver, expected_plan)``: read back, detect drift (a restarted empty
  data plane included), repair by pushing the expected plan again.
"""

from __future__ import annotations

import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import asdict
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.core.jsontext import canonical
from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    CapacityError,
    DataPlaneState,
    Driver,
    DriverError,
    NativeEntry,
    NativePlan,
    ProgressCallback,
    ProgressEvent,
    PushError,
    check_fits,
)
from sliceportal.rules.ir import CATALOGUE_LANES, FIELD_WIDTHS, MissPolicy, RuleIR
from sliceportal.rules.spec import TargetSpec

# Members that identify a native entry (the contract's suggested normal form); entries with
# the same identity but other members are "modified", as a TCAM rewrite in place would be.
IDENTITY_MEMBERS: tuple[str, ...] = ("table_key", "key", "mask", "priority", "match")


class _Model(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class PlanMismatchError(DriverError):
    """The driver's ``lower`` did not produce a plan for the IR it was given."""


def _identity(entry: NativeEntry) -> bytes:
    ident = {k: entry[k] for k in IDENTITY_MEMBERS if k in entry}
    return canonical(ident) if ident else canonical(entry)


def target_spec(caps: Capabilities, *, max_rules: int | None = None, miss: MissPolicy | None = None) -> TargetSpec:
    """The compiler's view of a backend: geometry, match fields, rule budget, miss policy.

    ``max_rules`` lets the compile preview say early whether the rules fit (deploys pass the
    smallest table capacity the driver declares, as a rule may take a slot in each table);
    the binding capacity check stays in ``plan_for``. Lanes beyond the catalogue's are
    never addressed by a slice, so the compiler sees at most the catalogue's.
    """
    return TargetSpec(
        lanes=min(caps.lanes, CATALOGUE_LANES),
        paths=caps.paths,
        match_fields=frozenset(FIELD_WIDTHS.keys() & set(caps.match_fields)),
        max_rules=max_rules,
        miss=miss or MissPolicy(),
    )


def check_capacity(plan: NativePlan, capacity: Mapping[str, int]) -> None:
    """Refuse a plan that overflows any table, naming it with needed vs. available.

    A table's need is the plan's reported usage where it has one (a default / miss entry
    takes no slot; a driver may count resources that are not entry lists), else its
    entry count; its room is the declared capacity, else the plan's own.
    """
    for table in sorted(set(plan.tables) | set(plan.usage)):
        usage = plan.usage.get(table)
        needed = usage.used if usage else len(plan.tables[table])
        available = capacity.get(table, usage.capacity if usage else None)
        if available is not None and needed > available:
            raise CapacityError(table, needed, available)


def plan_for(driver: Driver, ir: RuleIR) -> NativePlan:
    """Capabilities check, lowering and capacity check; raises before anything is written."""
    caps = driver.capabilities()
    check_fits(ir, caps)
    plan = driver.lower(ir)
    if plan.version != ir.digest():
        raise PlanMismatchError(
            f"the {caps.driver} driver lowered IR {ir.digest()} into a plan for version {plan.version}",
            hint="a driver bug: NativePlan.version must be RuleIR.digest()",
        )
    check_capacity(plan, caps.capacity)
    return plan


class TableDiff(_Model):
    added: list[NativeEntry] = Field(default_factory=list)
    removed: list[NativeEntry] = Field(default_factory=list)
    modified: list[tuple[NativeEntry, NativeEntry]] = Field(default_factory=list)  # (old, new)

    @property
    def changes(self) -> int:
        return len(self.added) + len(self.removed) + len(self.modified)


class PlanDiff(_Model):
    tables: dict[str, TableDiff] = Field(default_factory=dict)  # only tables that changed

    @property
    def empty(self) -> bool:
        return not self.tables

    def counts(self) -> dict[str, int]:
        return {
            "added": sum(len(t.added) for t in self.tables.values()),
            "removed": sum(len(t.removed) for t in self.tables.values()),
            "modified": sum(len(t.modified) for t in self.tables.values()),
        }


def _diff_table(old: Sequence[NativeEntry], new: Sequence[NativeEntry]) -> TableDiff:
    if not old or not new:  # a fresh backend, a table emptied: nothing to match
        return TableDiff(added=list(new), removed=list(old))
    # each entry's canonical text once (it was made four times per entry: a reconcile pass
    # diffs every backend's tables, bench scale_backends)
    old_keys, new_keys = [canonical(e) for e in old], [canonical(e) for e in new]
    old_count, new_count = Counter(old_keys), Counter(new_keys)
    if old_count == new_count:
        return TableDiff()
    common = old_count & new_count
    old_common, new_common = Counter(common), Counter(common)
    old_only = [e for e, k in zip(old, old_keys, strict=True) if _take(old_common, k)]
    new_only = [e for e, k in zip(new, new_keys, strict=True) if _take(new_common, k)]
    by_identity: dict[bytes, list[NativeEntry]] = {}
    for e in old_only:
        by_identity.setdefault(_identity(e), []).append(e)
    added: list[NativeEntry] = []
    modified: list[tuple[NativeEntry, NativeEntry]] = []
    for e in new_only:
        olds = by_identity.get(_identity(e))
        if olds:
            modified.append((olds.pop(0), e))
        else:
            added.append(e)
    removed = [e for es in by_identity.values() for e in es]
    return TableDiff(added=added, removed=removed, modified=modified)


def _take(common: Counter[bytes], key: bytes) -> bool:
    """True when the entry of canonical text ``key`` is not one of the entries both sides hold
    (multiset semantics)."""
    if common[key] > 0:
        common[key] -= 1
        return False
    return True


def diff_tables(old: Mapping[str, Sequence[NativeEntry]], new: Mapping[str, Sequence[NativeEntry]]) -> PlanDiff:
    """Entries added, removed and modified per table, order-insensitive within a table."""
    out: dict[str, TableDiff] = {}
    for table in sorted(set(old) | set(new)):
        d = _diff_table(old.get(table, []), new.get(table, []))
        if d.changes:
            out[table] = d
    return PlanDiff(tables=out)


def ir_tables(ir: RuleIR) -> dict[str, list[NativeEntry]]:
    """The IR as tables, so ``diff_tables`` also diffs two deployments backend-neutrally.

    A rule's identity is its match: the same match with another action is "modified".
    """
    return {
        "rules": [{"match": asdict(r.match), "action": asdict(r.action)} for r in ir.rules],
        "slices": [{"key": s.slice_id, **asdict(s)} for s in ir.slices],
        "miss": [{"key": "miss", **asdict(ir.miss)}],
    }


def _same_tables(a: Mapping[str, Sequence[NativeEntry]], b: Mapping[str, Sequence[NativeEntry]]) -> bool:
    return diff_tables(a, b).empty


class PushOutcome(_Model):
    ok: bool
    driver: str
    target_version: str
    previous_version: str | None
    version_after: str | None  # what the data plane reports holding afterwards (None = unknown/empty)
    result: ApplyResult | None = None
    diff: dict[str, int] = Field(default_factory=dict)  # added / removed / modified
    rolled_back: bool | None = None  # on failure: the data plane holds the previous version again
    verified: bool = False  # read-back after the push matched what should be there
    error: str | None = None
    hint: str = ""
    duration_s: float = 0.0
    events: list[ProgressEvent] = Field(default_factory=list)


def push(
    driver: Driver,
    plan: NativePlan,
    progress: ProgressCallback | None = None,
    *,
    previous: NativePlan | None = None,
) -> PushOutcome:
    """Apply ``plan`` all-or-nothing; never raises a ``DriverError`` (the outcome says).

    ``previous`` is the plan of the last good deployment; when a push that the driver
    believed successful fails its read-back, the framework re-applies it.
    """
    started = time.monotonic()
    events: list[ProgressEvent] = []

    def emit(event: ProgressEvent) -> None:
        events.append(event)
        if progress is not None:
            progress(event)

    base: dict[str, Any] = {"driver": plan.driver, "target_version": plan.version}

    def done(**kw: Any) -> PushOutcome:
        return PushOutcome(**base, **kw, duration_s=time.monotonic() - started, events=events)

    try:
        before = driver.read_state()
    except DriverError as e:
        # Nothing was written, so there is nothing to roll back.
        return done(ok=False, previous_version=None, version_after=None, error=f"before any write: {e}", hint=e.hint)
    base["previous_version"] = before.version
    diff = diff_tables(before.tables, plan.tables)
    counts = diff.counts()
    emit(
        ProgressEvent(
            phase="diff",
            done=0,
            total=sum(counts.values()),
            message=f"{counts['added']} to add, {counts['removed']} to remove, {counts['modified']} to modify",
        )
    )
    if _holds(before, plan, diff):
        emit(ProgressEvent(phase="commit", done=0, total=0, message="already up to date"))
        result = ApplyResult(version=plan.version, added=0, removed=0, modified=0, duration_s=0.0)
        return done(ok=True, version_after=plan.version, result=result, diff=counts, verified=True)

    try:
        result = driver.apply(plan, emit)
    except DriverError as e:
        # Rolled back only when the read-back shows the previous state; a PushError also says
        # whether the driver restored it, any other DriverError (the data plane vanished) not.
        after = _read_or_none(driver)
        restored = after is not None and after.version == before.version and _same_tables(after.tables, before.tables)
        return done(
            ok=False,
            version_after=after.version if after else None,
            diff=counts,
            rolled_back=restored and (e.rolled_back if isinstance(e, PushError) else True),
            error=str(e),
            hint=e.hint,
        )

    emit(ProgressEvent(phase="verify", done=0, total=1, message="reading back the data plane"))
    after = _read_or_none(driver)
    if after is not None and after.version == plan.version and _same_tables(after.tables, plan.tables):
        emit(ProgressEvent(phase="verify", done=1, total=1, message="read-back matches the plan"))
        return done(ok=True, version_after=after.version, result=result, diff=counts, verified=True)

    reason = (
        "the data plane did not answer the read-back"
        if after is None
        else (
            f"read-back after apply differs from the plan (version {after.version}, "
            f"{diff_tables(plan.tables, after.tables).counts()})"
        )
    )
    rolled_back = False
    if previous is not None:
        emit(ProgressEvent(phase="rollback", done=0, total=1, message=f"re-applying {previous.version}"))
        try:
            driver.apply(previous, emit)
            back = _read_or_none(driver)
            rolled_back = back is not None and back.version == previous.version
        except DriverError:
            rolled_back = False
        emit(ProgressEvent(phase="rollback", done=1, total=1, message="done" if rolled_back else "failed"))
    return done(
        ok=False,
        version_after=after.version if after else None,
        result=result,
        diff=counts,
        rolled_back=rolled_back,
        error=reason,
        hint="the driver reported success but the data plane holds something else",
    )


def _read_or_none(driver: Driver) -> DataPlaneState | None:
    try:
        return driver.read_state()
    except DriverError:
        return None


class ReconcileReport(_Model):
    driver: str
    expected_version: str
    found_version: str | None
    reachable: bool
    in_sync: bool
    restarted_empty: bool  # the data plane reports no version: it came back without our plan
    drift: dict[str, int] = Field(default_factory=dict)  # added / removed / modified to repair
    drift_tables: list[str] = Field(default_factory=list)
    repaired: bool = False
    outcome: PushOutcome | None = None
    error: str | None = None


def _holds(state: DataPlaneState, plan: NativePlan, diff: PlanDiff) -> bool:
    """The data plane holds exactly ``plan``: its tables, and its version or none it can name.
    A driver names the version of what it holds when it knows the plan (one it lowered or
    pushed); another process's driver, handed a plan stored at deploy time, may not -- the
    tables are the fact then (the version is the digest of what lowered to them)."""
    return diff.empty and state.version in (plan.version, None)


def _read_with_one_retry(driver: Driver) -> DataPlaneState:
    # A driver whose session died with a restarted data plane typically notices on the
    # first failed call and reconnects on the next; one retry saves a whole period.
    try:
        return driver.read_state()
    except DriverError:
        return driver.read_state()


def reconcile_once(
    driver: Driver,
    expected: NativePlan,
    progress: ProgressCallback | None = None,
    *,
    relower: Callable[[NativePlan], NativePlan] | None = None,
) -> ReconcileReport:
    """Read the data plane back, report any drift from ``expected`` and repair it. ``relower``:
    on drift, before any write, the plan as the driver lowers the same rule set now (a stored
    plan may carry an older layout or numbering); compared with the same read-back."""
    base: dict[str, Any] = {"driver": expected.driver, "expected_version": expected.version}
    try:
        state = _read_with_one_retry(driver)
    except DriverError as e:
        return ReconcileReport(
            **base, found_version=None, reachable=False, in_sync=False, restarted_empty=False, error=str(e)
        )
    diff = diff_tables(state.tables, expected.tables)
    if not _holds(state, expected, diff) and relower is not None:
        expected = relower(expected)
        diff = diff_tables(state.tables, expected.tables)
    if _holds(state, expected, diff):
        return ReconcileReport(
            **base, found_version=expected.version, reachable=True, in_sync=True, restarted_empty=False
        )
    # No version means nothing the portal pushed is there: a restarted (or never filled)
    # data plane; it may still hold its own default entries.
    restarted = state.version is None
    outcome = push(driver, expected, progress)
    return ReconcileReport(
        **base,
        found_version=state.version,
        reachable=True,
        in_sync=False,
        restarted_empty=restarted,
        drift=diff.counts(),
        drift_tables=sorted(diff.tables),
        repaired=outcome.ok,
        outcome=outcome,
        error=outcome.error,
    )
