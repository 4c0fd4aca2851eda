"""Compile, preview, deploy, roll back and reconcile rules on one backend.

The pure parts (compiler, lowering, push, diff, reconcile) live in ``sliceportal.rules``
and ``sliceportal.drivers.push``; this module adds what needs the database: building the
compiler's input from the domain, versioned RuleSets, Deployment records, slice states
and the audit trail. A deployment row is committed as ``running`` before the push starts
and completed afterwards; it is the push's job record (``services/jobs.py``): its runner
renews a heartbeat while it pushes, and when the runner dies mid-push the leading controller
(or whoever takes the backend's lock first) finishes the push (``resume``), so the row ends
``succeeded`` or ``failed`` with ``resumed_by`` saying so. A row without a heartbeat (written
before jobs existed) ends as failed (interrupted) as before.

Deploy, rollback and reconcile of one backend hold the backend's PostgreSQL advisory lock
for their whole duration (``services.backends.backend_lock``): a reconcile never reads a
half-written data plane, and never compares it with a rule set a running push replaces.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from typing import Any, NamedTuple

from sqlalchemy import ColumnElement, Select, Table, bindparam, case, func, inspect, literal, select, update
from sqlalchemy.exc import DBAPIError, InvalidRequestError
from sqlalchemy.orm import Session, defer, lazyload, make_transient_to_detached, sessionmaker
from sqlalchemy.orm.attributes import set_committed_value
from tenacity import Retrying, retry_if_exception_type, stop_after_delay, wait_exponential

from sliceportal.drivers.contract import (
    Capabilities,
    CapacityError,
    Driver,
    DriverError,
    NativePlan,
    ProgressEvent,
)
from sliceportal.drivers.push import (
    PushOutcome,
    ReconcileReport,
    diff_tables,
    plan_for,
    push,
    reconcile_once,
    target_spec,
)
from sliceportal.models import (
    Backend,
    Deployment,
    DeploymentKind,
    DeploymentStatus,
    RuleSet,
    Slice,
    SliceState,
)
from sliceportal.models.audit import record
from sliceportal.models.base import json_document
from sliceportal.models.queries import current_rule_set as current_rule_set  # the services' callers ask here
from sliceportal.models.slicing import HEALTH_DOWN
from sliceportal.rules.compiler import CompileResult
from sliceportal.rules.equivalence import EquivalenceResult
from sliceportal.rules.errors import CompileError
from sliceportal.rules.ir import RuleIR
from sliceportal.services import admission, enforcement, footprint_push, health_probe, jobs
from sliceportal.services.admission import Override
from sliceportal.services.backends import POOL, backend_lock
from sliceportal.services.compile_inputs import SharedCompiles
from sliceportal.services.enforcement import Gap
from sliceportal.services.equivalence import to_json as equivalence_json
from sliceportal.services.errors import (
    BusyError,
    ConflictError,
    DomainError,
    FieldIssue,
    InvalidError,
    NotFoundError,
    UnavailableError,
)

log = logging.getLogger(__name__)
INTERRUPTED = "interrupted"  # the error of a deployment whose worker died or lost the database
LOCK_WAIT_S = 30.0  # how long a deploy waits for a reconcile / another deploy of the backend
FINISH_RETRY_S = 30.0  # how long a finished push retries recording its outcome


@dataclass(frozen=True)
class Preview:
    compiled: CompileResult
    plan: NativePlan
    equivalence: EquivalenceResult | None = None  # the plan proven equal to the IR (issue #20)
    enforcement: tuple[Gap, ...] = ()  # SLA attributes the backend cannot enforce, all accepted (#14.3)


@dataclass(frozen=True)
class Prepared:
    """A preview made before the backend's lock (a slice deploy's preflight) and what it was
    compiled from. The deploy under the lock takes it instead of compiling again when none of
    that has changed since; any change (an edit bumps ``input_key``) compiles anew. ``admitted``:
    the preflight's admission check passed on the same facts, so it need not run again."""

    backend_id: int
    backend_name: str  # as the preflight read it (what a fan-out's outcome names it by)
    input_key: str  # footprint_state.input_key: the backend's slices and what they compile from
    backend_facts: tuple[Any, ...]  # the backend row's part in the compile and admission (_backend_facts)
    caps: Capabilities
    preview: Preview
    admitted: bool = False

    def still_holds(self, input_key: str, backend: Backend, caps: Capabilities) -> bool:
        """``input_key``: ``footprint_push.input_key`` read now, under the backend's lock."""
        return (
            self.backend_id == backend.id
            and self.input_key == input_key
            and self.backend_facts == _backend_facts(backend)
            and self.caps == caps
        )


def _backend_facts(backend: Backend) -> tuple[Any, ...]:
    # the driver instance (its options), which SLA gaps the operator accepted (enforcement.py),
    # and what admission control weighs the slices against (admission.evaluate)
    return (
        backend.driver,
        backend.options,
        tuple(backend.accept_unenforced or ()),
        backend.link_bps,
        backend.port_bps,
        backend.lanes,
    )


@dataclass(frozen=True)
class Unchanged:
    """A deploy whose compiled plan equals the rule set in force: nothing stored, nothing pushed."""

    backend_id: int
    rule_set: int  # the number of the rule set in force
    digest: str
    status: str = "unchanged"


def _refusal(exc: Exception) -> DomainError:
    if isinstance(exc, CompileError):
        return InvalidError(
            exc.message, title="Cannot compile", issues=[FieldIssue(exc.field or "slices", exc.message)]
        )
    if isinstance(exc, CapacityError):
        return ConflictError(
            f"{exc.message}: needed {exc.needed}, available {exc.available}",
            title="Does not fit",
            issues=[FieldIssue(exc.table, exc.message)],
        )
    assert isinstance(exc, DriverError)
    detail = f"{exc.message}{'; ' + exc.hint if exc.hint else ''}"
    return (InvalidError if exc.hint else ConflictError)(detail, title="Refused by the data plane")


def _capabilities(drv: Driver) -> Capabilities:
    try:
        return drv.capabilities()
    except DriverError as exc:
        raise _refusal(exc) from exc


def _preview(
    session: Session, backend: Backend, drv: Driver, caps: Capabilities, key: str, shared: SharedCompiles | None = None
) -> Preview:
    """``key``: the backend's footprint input key, read before this compile; ``shared``: compiles
    of the same slice set for other backends of this pass (``SharedCompiles``)."""
    shared = shared or SharedCompiles()
    try:
        _, _, slices = shared.specs(session, backend, key)
        # capabilities decide, before compiling: no silent downgrade of an SLA (services/enforcement.py)
        found = enforcement.gaps(backend, caps, slices)
        found += enforcement.slice_intent_gaps(session, backend, caps, slices)
        enforcement.refuse_unenforceable(found)
        budget = min(caps.capacity.values()) if caps.capacity else None
        compiled = shared.compiled(session, backend, key, target_spec(caps, max_rules=budget))
        plan = plan_for(drv, compiled.ir)
        return Preview(compiled, plan, shared.proven(compiled.ir, plan, drv), tuple(found))
    except (CompileError, DriverError) as exc:
        raise _refusal(exc) from exc


def preview(session: Session, backend: Backend) -> Preview:
    """Compile and lower for ``backend`` without touching its data plane."""
    return prepare(session, backend).preview


def prepare(
    session: Session, backend: Backend, shared: SharedCompiles | None = None, key: str | None = None
) -> Prepared:
    """``preview``, with what it was compiled from, for a deploy that may follow (``Prepared``).
    ``key``: the backend's footprint input key when the caller read it (before this compile)."""
    with POOL.use(session, backend) as drv:
        if key is None:
            key = footprint_push.input_key(session, backend.id)  # before the compile, as _deploy reads it
        caps = _capabilities(drv)
        p = _preview(session, backend, drv, caps, key, shared)
        return Prepared(backend.id, backend.name, key, _backend_facts(backend), caps, p)


_LAST_NUMBER = select(func.max(RuleSet.number)).where(RuleSet.backend_id == bindparam("backend_id"))  # built once


def _store_rule_set(session: Session, backend: Backend, p: Preview, actor: str) -> RuleSet:
    number = (session.scalar(_LAST_NUMBER, {"backend_id": backend.id}) or 0) + 1
    explanation = {
        "flows": p.compiled.flows,
        "rules_before": p.compiled.rules_before,
        "rules_after": p.compiled.rules_after,
        "slices": [asdict(s) for s in p.compiled.slices],
    }
    if p.equivalence is not None:
        explanation["equivalence"] = equivalence_json(p.equivalence)
    rs = RuleSet(
        backend_id=backend.id,
        number=number,
        digest=p.plan.version,
        # as text made once (the IR is a fleet's shared compile; pydantic writes the plan's):
        # neither is made into Python objects to be encoded again, once a backend
        ir=json_document(p.compiled.ir.json_text()),
        plan=json_document(p.plan.model_dump_json()),
        explanation=explanation,
        created_by=actor,
    )
    session.add(rs)
    session.flush()
    return rs


def interrupt_orphans(session: Session, backend_id: int) -> int:
    """Mark this backend's ``running`` deployments without a job heartbeat (rows from before
    jobs, migration 0017) failed (interrupted); the caller holds its lock. Job rows are
    resumed instead (``_settle_orphans``).

    Every push holds the backend's advisory lock from before its row exists until after it
    is finished, and PostgreSQL drops a lock with its connection: so a running row seen
    under the lock belongs to a worker that died or lost the database mid-push.
    """
    now = datetime.now(UTC)
    orphans = list(
        session.scalars(
            select(Deployment).where(
                Deployment.backend_id == backend_id,
                Deployment.status == DeploymentStatus.RUNNING,
                Deployment.heartbeat_at.is_(None),
            )
        )
    )
    for dep in orphans:
        dep.status, dep.finished_at = DeploymentStatus.FAILED, now
        dep.error = INTERRUPTED
        record(
            session,
            DeploymentKind(dep.kind).value,
            "backend",
            backend_id,
            after={"deployment": dep.id, "status": dep.status.value, "error": dep.error},
        )
    if orphans:
        session.commit()
    return len(orphans)


def interrupt_all_orphans(sessions: sessionmaker[Session]) -> int:
    """At start-up: end every deployment a dead process left ``running`` without a job
    heartbeat (skips backends in use). Job rows are the leader's to resume (``services/jobs.py``):
    a worker uvicorn starts in place of a killed one must not fail the job it left."""
    count = 0
    with sessions() as session:
        ids = list(
            session.scalars(
                select(Deployment.backend_id)
                .where(Deployment.status == DeploymentStatus.RUNNING, Deployment.heartbeat_at.is_(None))
                .distinct()
            )
        )
        for backend_id in ids:
            with backend_lock(session, backend_id, wait_s=0) as got:
                if got:  # a live worker holding it is still pushing: its row is not an orphan
                    count += interrupt_orphans(session, backend_id)
    return count


_SLICES: Table = Slice.__table__  # type: ignore[assignment]
# built once (a statement built per call costs its construction and cache key, per backend)
_MARK_DEPLOYED = (
    update(_SLICES)
    .where(
        _SLICES.c.id.in_(bindparam("refs", expanding=True)),
        _SLICES.c.state.in_((SliceState.DRAFT, SliceState.COMPILED)),
    )
    .values(state=SliceState.DEPLOYED)
)


def _mark_slices_deployed(session: Session, refs: Sequence[int]) -> None:
    # Per-backend slice state is derived (services/slice_status.py); this only records that a
    # slice left the draft stage once a finished deployment carried it.
    # A plain UPDATE of the table, not the ORM's versioned one: deployments of one slice to
    # several backends finish concurrently (services/slice_deploy.py), and a fact is no
    # operator's edit (no 412). Not the ORM's bulk UPDATE either: nothing in the session needs
    # synchronising, and its machinery was most of the statement's CPU in a fan-out.
    if refs:
        session.execute(_MARK_DEPLOYED, {"refs": list(refs)})


# what a finished push records of its rule set: not the whole row (its IR and plan, decoded for
# every backend of a fan-out, were a tenth of its CPU a backend)
_NUMBER_AND_SLICES = select(RuleSet.number, RuleSet.ir["slices"]).where(RuleSet.id == bindparam("id"))


class _RuleSetFacts(NamedTuple):
    """What a finished push records of its rule set, when the pusher has it at hand (a deploy
    made it): else read (``_NUMBER_AND_SLICES``)."""

    number: int
    slice_refs: Sequence[int]


_DEPLOYMENTS: Table = Deployment.__table__  # type: ignore[assignment]
# the outcome, written only while the row is still running and still this caller's: one
# statement, built once (it was a locking read and the ORM's flush, for every backend of a fan-out)
_FINISH = (
    update(_DEPLOYMENTS)
    .where(
        _DEPLOYMENTS.c.id == bindparam("dep_id"),
        _DEPLOYMENTS.c.status == DeploymentStatus.RUNNING,
        _DEPLOYMENTS.c.resumed_by == bindparam("owner"),
    )
    .values(
        status=bindparam("status"),
        error=bindparam("error"),
        rolled_back=bindparam("rolled_back"),
        finished_at=bindparam("finished_at"),
        duration_s=bindparam("duration_s"),
    )
    .returning(_DEPLOYMENTS.c.id)
)


_WRITTEN_ELSEWHERE = ["heartbeat_at", "progress", "resumed_by", "updated_at"]


def _finish(
    session: Session,
    dep_id: int,
    rule_set_id: int,
    kind: DeploymentKind,
    backend_id: int,
    outcome: PushOutcome,
    owner: str = "",
    facts_of_rule_set: _RuleSetFacts | None = None,
) -> Deployment | None:
    """Write the outcome, its slice states and its audit row in one transaction.

    Returns None when the row is no longer running, or is no longer this caller's job
    (``owner``: "" for its runner, the resumer's name for a resumed push): it was declared
    interrupted, or resumed, while this worker had lost the database (and with it the lock);
    that verdict, or the resumer's outcome, stands.
    """
    facts: dict[str, Any] = {
        "status": DeploymentStatus.SUCCEEDED if outcome.ok else DeploymentStatus.FAILED,
        "error": "" if outcome.ok else f"{outcome.error}{'; ' + outcome.hint if outcome.hint else ''}",
        "rolled_back": outcome.rolled_back,
        "finished_at": datetime.now(UTC),
        "duration_s": outcome.duration_s,
    }
    # the UPDATE takes the row's lock, which orders it against a reconcile that declares the row
    # interrupted; a row that one changed first no longer matches (READ COMMITTED re-checks it)
    if session.execute(_FINISH, {"dep_id": dep_id, "owner": owner, **facts}).first() is None:
        session.rollback()
        return None
    if facts_of_rule_set is None:
        number, slices = session.execute(_NUMBER_AND_SLICES, {"id": rule_set_id}).one()
        facts_of_rule_set = _RuleSetFacts(number, [int(x["ref"]) for x in slices or [] if "ref" in x])
    number = facts_of_rule_set.number
    if outcome.ok:
        _mark_slices_deployed(session, facts_of_rule_set.slice_refs)
    record(
        session,
        kind.value,
        "backend",
        backend_id,
        after={
            "deployment": dep_id,
            "rule_set": number,
            "status": facts["status"].value,
            "diff": dict(outcome.diff),
            "error": facts["error"],
        },
    )
    session.commit()
    # the session's own object when it has it (no statement), with the outcome as committed; not
    # its two rule sets (joined by default: 60 KB of JSON each at 10 k subscribers) nor its diff
    dep = session.get(
        Deployment,
        dep_id,
        options=[lazyload(Deployment.rule_set), lazyload(Deployment.previous_rule_set), defer(Deployment.diff)],
    )
    assert dep is not None
    for name, value in facts.items():
        set_committed_value(dep, name, value)
    inspect(dep).info[_NUMBER] = number  # what a fan-out answers (``finished_number``), not read again
    # what others wrote to the row meanwhile (the heartbeat's thread, a resumer, the UPDATE's
    # clock) is read when asked for (an API answer), not before
    session.expire(dep, _WRITTEN_ELSEWHERE)
    return dep


_NUMBER = "rule_set_number"


def finished_number(session: Session, dep: Deployment) -> int:
    """The number of the rule set of ``dep``, finished in this session: as ``_finish`` read it,
    else its number alone (``dep.rule_set_number`` loads the whole rule set, whose IR and plan
    were stored from text and are not in the session)."""
    number = inspect(dep).info.get(_NUMBER)
    if number is None:
        number = session.scalar(select(RuleSet.number).where(RuleSet.id == dep.rule_set_id))
    assert number is not None
    return int(number)


def _finish_retrying(
    session: Session,
    dep_id: int,
    rule_set_id: int,
    kind: DeploymentKind,
    backend_id: int,
    outcome: PushOutcome,
    owner: str = "",
    facts_of_rule_set: _RuleSetFacts | None = None,
) -> Deployment:
    # The push is done on the wire; losing its record to a database blip would leave the
    # row running. Retry while the database comes back (bounded), then give up loudly.
    for attempt in Retrying(
        stop=stop_after_delay(FINISH_RETRY_S),
        wait=wait_exponential(0.2, max=2),
        retry=retry_if_exception_type(DBAPIError),
        reraise=True,
        before_sleep=lambda _: session.rollback(),
    ):
        with attempt:
            dep = _finish(session, dep_id, rule_set_id, kind, backend_id, outcome, owner, facts_of_rule_set)
    if dep is None:
        dep = session.get_one(Deployment, dep_id, populate_existing=True)
    return dep


def _run(
    session: Session,
    backend: Backend,
    rule_set: RuleSet,
    kind: DeploymentKind,
    actor: str,
    drv: Driver,
    progress: Callable[[ProgressEvent], None] | None,
    on_job: Callable[[int], None] | None = None,
    plan: NativePlan | None = None,
    *,
    previous: RuleSet | None,
    slice_refs: Sequence[int] | None = None,
) -> Deployment:
    """``plan``: ``rule_set``'s plan where the caller has it (not validated again);
    ``previous``: the rule set in force (``current_rule_set``), read under the backend's lock;
    ``slice_refs``: the slices ``rule_set`` carries, where the caller has its IR."""
    prev_plan = NativePlan.model_validate(previous.plan) if previous else None
    new_plan = plan or NativePlan.model_validate(rule_set.plan)
    diff = diff_tables(prev_plan.tables if prev_plan else {}, new_plan.tables)
    dep = Deployment(
        backend_id=backend.id,
        rule_set_id=rule_set.id,
        previous_rule_set_id=previous.id if previous else None,
        kind=kind,
        actor=actor,
        diff=diff.model_dump(mode="json"),
        runner=jobs.runner_name(),
        heartbeat_at=func.clock_timestamp(),
    )
    session.add(dep)
    session.commit()  # visible as running while the push is under way; the job record from here on
    dep_id, rule_set_id, backend_id = dep.id, rule_set.id, backend.id
    if on_job is not None:
        on_job(dep_id)
    known = _RuleSetFacts(rule_set.number, slice_refs) if slice_refs is not None else None
    return _push_job(
        session, dep_id, rule_set_id, kind, backend_id, drv, new_plan, prev_plan, progress, facts_of_rule_set=known
    )


def _push_job(
    session: Session,
    dep_id: int,
    rule_set_id: int,
    kind: DeploymentKind,
    backend_id: int,
    drv: Driver,
    new_plan: NativePlan,
    prev_plan: NativePlan | None,
    progress: Callable[[ProgressEvent], None] | None,
    prefix: str = "",
    owner: str = "",
    facts_of_rule_set: _RuleSetFacts | None = None,
) -> Deployment:
    """Push a job's rule set with its heartbeat renewed, and record the outcome once (``owner``:
    "" for the job's runner, the resumer's name when resumed)."""
    with jobs.Heartbeat(session.get_bind(), dep_id, progress) as beat:
        try:
            outcome: PushOutcome = push(drv, new_plan, beat.progress, previous=prev_plan)
        except Exception as exc:  # push reports driver failures itself; anything else still ends the row
            outcome = PushOutcome(
                ok=False,
                driver=new_plan.driver,
                target_version=new_plan.version,
                previous_version=prev_plan.version if prev_plan else None,
                version_after=None,
                error=f"{prefix or INTERRUPTED + ': '}{type(exc).__name__}: {exc}",
            )
            _finish_retrying(session, dep_id, rule_set_id, kind, backend_id, outcome, owner, facts_of_rule_set)
            raise
    if not outcome.ok and prefix:
        outcome = outcome.model_copy(update={"error": f"{prefix}{outcome.error}"})
    return _finish_retrying(session, dep_id, rule_set_id, kind, backend_id, outcome, owner, facts_of_rule_set)


def resume(session: Session, backend: Backend, dep_id: int, by: str) -> Deployment | None:
    """Finish the push of a job whose runner died; the caller holds the backend's lock.

    The row keeps its ``runner`` and gains ``resumed_by``; the push starts again from what the
    data plane holds (part of the interrupted push, or all of it), so it writes only what is
    missing. The outcome and its one audit row are written as the runner would have. None
    when the row is no longer running.
    """
    dep = session.get(Deployment, dep_id, populate_existing=True)
    if dep is None or dep.status != DeploymentStatus.RUNNING:
        return None
    kind, rule_set_id, runner = DeploymentKind(dep.kind), dep.rule_set_id, dep.runner or "?"
    new_plan = NativePlan.model_validate(dep.rule_set.plan)
    prev_plan = NativePlan.model_validate(dep.previous_rule_set.plan) if dep.previous_rule_set else None
    log.warning(
        "backend %s: deployment %d was left running by %s (last heartbeat %s); %s finishes it",
        backend.name,
        dep_id,
        runner,
        dep.heartbeat_at,
        by,
    )
    session.execute(
        update(Deployment).where(Deployment.id == dep_id).values(resumed_by=by, heartbeat_at=func.clock_timestamp())
    )
    session.commit()
    prefix = f"{INTERRUPTED} (runner {runner} died; resumed by {by}): "
    try:
        with POOL.use(session, backend) as drv:
            return _push_job(
                session, dep_id, rule_set_id, kind, backend.id, drv, new_plan, prev_plan, None, prefix=prefix, owner=by
            )
    except (DomainError, DriverError) as exc:  # the driver cannot even be built: say so, end the row
        outcome = PushOutcome(
            ok=False,
            driver=new_plan.driver,
            target_version=new_plan.version,
            previous_version=prev_plan.version if prev_plan else None,
            version_after=None,
            error=f"{prefix}{getattr(exc, 'message', None) or exc}",
        )
        return _finish_retrying(session, dep_id, rule_set_id, kind, backend.id, outcome, by)


@functools.cache
def _running(stale_s: float) -> Select[int, bool, bool]:
    """A backend's running rows, built once per staleness (every push runs it, and building
    a statement costs about as much as running it)."""
    return (
        select(Deployment.id, Deployment.heartbeat_at.is_(None).label("pre_jobs"), jobs.stale(stale_s).label("stale"))
        .where(Deployment.backend_id == bindparam("backend_id"), Deployment.status == DeploymentStatus.RUNNING)
        .order_by(Deployment.id)
    )


def _settle_orphans(session: Session, backend: Backend) -> None:
    """Whatever a dead process left ``running`` on this backend; the caller holds its lock.

    Rows from before jobs end as failed (interrupted). A job whose heartbeat is stale is
    finished now (``resume``). A job whose heartbeat is fresh has a live runner that lost the
    lock with a database blip and is still pushing: the backend is busy until it finishes or
    its heartbeat goes stale.
    """
    # one statement for both kinds (every deploy of every backend passes here; almost always
    # nothing is running)
    running = session.execute(_running(jobs.STALE_S), {"backend_id": backend.id}).all()
    if any(r.pre_jobs for r in running):
        interrupt_orphans(session, backend.id)
    for dep_id, pre_jobs, is_stale in running:
        if pre_jobs:
            continue
        if not is_stale:
            raise BusyError(
                f"deployment {dep_id} of backend {backend.name} is still being pushed by its runner; "
                "retry when it has finished"
            )
        resume(session, backend, dep_id, jobs.runner_name())


def resume_stale(session: Session, backend_id: int, by: str) -> int:
    """The job duty's pass over one backend: finish its stale jobs if its lock is free (else a
    live holder has it: skipped). How many were finished."""
    backend = session.get(Backend, backend_id)
    if backend is None:
        return 0
    with backend_lock(session, backend_id, wait_s=0) as got:
        if not got:
            return 0
        interrupt_orphans(session, backend_id)
        ids = list(
            session.scalars(
                select(Deployment.id).where(Deployment.backend_id == backend_id, jobs.stale()).order_by(Deployment.id)
            )
        )
        session.rollback()
        return sum(resume(session, backend, dep_id, by) is not None for dep_id in ids)


def _as_lowered_now(session: Session, drv: Driver, rule_set: RuleSet, stored: NativePlan) -> NativePlan:
    """The rule set's plan as this driver lowers its IR today, against what the data plane holds.
    A plan stored by an older build of the driver (an upgrade that changed the native layout,
    e.g. new XDP special slots) would otherwise look like drift forever, and repairing towards
    it would write the old layout. Lowering may also follow the data plane (P4 priorities and
    NetFPGA slots stay where the switch holds them; a restarted, empty one gets a fresh
    numbering). The re-lowered plan replaces the stored one (same IR, same version; audited)."""
    fresh = drv.lower(RuleIR.from_json(rule_set.ir))
    if fresh.version != stored.version or fresh.tables == stored.tables:
        return stored  # the IR does not round-trip (never expected), or the layout is the same: real drift
    log.info(
        "backend %s: rule set %s lowered again for what the data plane holds (the stored %s plan differs: "
        "an older layout or numbering)",
        rule_set.backend_id,
        rule_set.number,
        fresh.driver,
    )
    rule_set.plan = fresh.model_dump(mode="json")
    return fresh


def _refuse_if_down(session: Session, backend: Backend) -> None:
    """Refuse (503, nothing stored) a push to a backend the health probes found down, once
    probing it again (``down_after`` bounded probes) did not find it answering: the probes'
    verdict may be a few seconds old, or a busy host's (issue #26)."""
    if backend.health not in HEALTH_DOWN:
        return
    answered, detail = health_probe.recheck(sessionmaker(bind=session.get_bind()), backend)
    if answered:
        session.refresh(backend)
        return
    raise UnavailableError(
        f"backend {backend.name} is {backend.health}: {detail or 'no detail'}; deploy again once its health is ok",
        title="Backend unavailable",
    )


def _ensure_up(drv: Driver, backend: Backend) -> None:
    """Refuse (503, nothing stored) a push to a data plane that does not answer now, before any
    write; asked up to ``down_after`` times within one probe timeout, since one slow or failed
    answer on a busy host is no outage (issue #26)."""
    policy = health_probe.policy_for(backend.driver)
    deadline = time.monotonic() + policy.timeout_s
    for attempt in range(policy.down_after):
        failure: UnavailableError
        try:
            health = drv.health()
        except DriverError as exc:
            failure = UnavailableError(
                f"backend {backend.name} does not answer: {exc.message}", title="Backend unavailable"
            )
        else:
            if health.ok:
                return
            failure = UnavailableError(f"backend {backend.name} is down: {health.detail}", title="Backend unavailable")
        if attempt + 1 == policy.down_after or time.monotonic() + 0.5 >= deadline:
            raise failure
        time.sleep(0.5)


def unread(session: Session, backend_id: int) -> Backend:
    """The session's object for backend ``backend_id``, its row not read yet: a push reads it
    once it holds the backend's lock (``_locked``). For a fan-out's pushes, whose preflight read
    every backend moments before: one read of the row fewer a backend."""
    backend = Backend(id=backend_id)
    make_transient_to_detached(backend)
    session.add(backend)
    return backend


@contextmanager
def _locked(session: Session, backend: Backend, wait_s: float) -> Iterator[None]:
    backend_id = backend.id  # a refresh that finds no row expires even the id
    with backend_lock(session, backend_id, wait_s=wait_s) as got:
        if not got:
            raise BusyError(
                f"another deployment or reconcile of backend {backend.name} is in progress; retry when it has finished"
            )
        try:
            session.refresh(backend)  # as it is now that we hold it (health, sync facts, options)
        except InvalidRequestError as exc:  # its row went away (``unread``: never read before)
            raise NotFoundError(f"backend {backend_id} does not exist") from exc
        _settle_orphans(session, backend)
        yield


def _in_force(backend: Backend, p: Preview, current: RuleSet | None) -> RuleSet | None:
    """``current`` (the rule set in force) when it is exactly ``p`` and the data plane was last
    seen holding it.

    Digest and native tables both: a driver change that lowers the same IR differently is a
    change. A backend whose last read-back found drift is not "unchanged": deploying repairs it.
    """
    if current is None or current.digest != p.plan.version or backend.sync_state == "out_of_sync":
        return None
    return current if current.plan == p.plan.model_dump(mode="json") else None


def deploy(
    session: Session,
    backend: Backend,
    actor: str,
    progress: Callable[[ProgressEvent], None] | None = None,
    *,
    lock_wait_s: float = LOCK_WAIT_S,
    override: Override | None = None,
) -> Deployment:
    """Compile and push every slice assigned to ``backend`` (always a new rule set and push).

    Admission control runs first (``services.admission``): a refusal is an ``AdmissionError``
    (409) unless an operator's ``override`` admits it (audited).
    """
    dep = _deploy(session, backend, actor, progress, lock_wait_s=lock_wait_s, skip_unchanged=False, override=override)
    assert isinstance(dep, Deployment)
    return dep


def deploy_changes(
    session: Session,
    backend: Backend,
    actor: str,
    progress: Callable[[ProgressEvent], None] | None = None,
    *,
    lock_wait_s: float = LOCK_WAIT_S,
    override: Override | None = None,
    on_job: Callable[[int], None] | None = None,
    prepared: Prepared | None = None,
) -> Deployment | Unchanged:
    """Like ``deploy``, but an identical redeploy is a no-op: ``Unchanged`` names the rule set in
    force; no rule set is stored, nothing is pushed, and the audit log records it as such.
    ``on_job`` is called with the deployment's id once its row is committed, before the push;
    ``prepared`` (``prepare``) is used instead of compiling when it still holds."""
    return _deploy(
        session,
        backend,
        actor,
        progress,
        lock_wait_s=lock_wait_s,
        skip_unchanged=True,
        override=override,
        on_job=on_job,
        prepared=prepared,
    )


def _deploy(
    session: Session,
    backend: Backend,
    actor: str,
    progress: Callable[[ProgressEvent], None] | None,
    *,
    lock_wait_s: float,
    skip_unchanged: bool,
    override: Override | None,
    on_job: Callable[[int], None] | None = None,
    prepared: Prepared | None = None,
) -> Deployment | Unchanged:
    if prepared is None:  # a preflight refused it moments ago (slice_deploy.preflight)
        _refuse_if_down(session, backend)  # before waiting for the lock: a reconcile may be stuck on the dead plane
    with _locked(session, backend, lock_wait_s):
        _refuse_if_down(session, backend)  # before the driver: a hung probe may hold it
        with POOL.use(session, backend) as drv:
            _ensure_up(drv, backend)
            key = footprint_push.input_key(session, backend.id)  # before the compile: footprint_push.py
            caps = _capabilities(drv)
            # what the preflight made from exactly these facts is not made again
            reuse = prepared if prepared is not None and prepared.still_holds(key, backend, caps) else None
            if reuse is None or not reuse.admitted or override is not None:
                admission.check(session, [backend], override=override, action="deploy", subject=backend)
            p = reuse.preview if reuse is not None else _preview(session, backend, drv, caps, key)
            previous = current_rule_set(session, backend.id)
            if skip_unchanged and (current := _in_force(backend, p, previous)) is not None:
                record(
                    session,
                    DeploymentKind.DEPLOY.value,
                    "backend",
                    backend.id,
                    after={"status": "unchanged", "rule_set": current.number, "digest": current.digest},
                )
                session.commit()
                return Unchanged(backend.id, current.number, current.digest)
            rule_set = _store_rule_set(session, backend, p, actor)
            dep = _run(
                session,
                backend,
                rule_set,
                DeploymentKind.DEPLOY,
                actor,
                drv,
                progress,
                on_job,
                p.plan,
                previous=previous,
                slice_refs=[x.ref for x in p.compiled.ir.slices],
            )
            footprint_push.after_push(session, dep, key, p.compiled.ir)
            return dep


def rollback(
    session: Session,
    backend: Backend,
    rule_set_number: int,
    actor: str,
    progress: Callable[[ProgressEvent], None] | None = None,
    *,
    lock_wait_s: float = LOCK_WAIT_S,
    on_job: Callable[[int], None] | None = None,
) -> Deployment:
    rule_set = session.scalar(
        select(RuleSet).where(RuleSet.backend_id == backend.id, RuleSet.number == rule_set_number)
    )
    if rule_set is None:
        raise NotFoundError(f"backend {backend.id} has no rule set {rule_set_number}", field="rule_set")
    _refuse_if_down(session, backend)
    with _locked(session, backend, lock_wait_s):
        _refuse_if_down(session, backend)
        with POOL.use(session, backend) as drv:
            _ensure_up(drv, backend)
            # the older rule set as this driver lowers it against what the plane holds now: not
            # the layout or numbering it had when it was stored
            plan = _as_lowered_now(session, drv, rule_set, NativePlan.model_validate(rule_set.plan))
            previous = current_rule_set(session, backend.id)
            dep = _run(
                session,
                backend,
                rule_set,
                DeploymentKind.ROLLBACK,
                actor,
                drv,
                progress,
                on_job,
                plan,
                previous=previous,
            )
            footprint_push.after_push(session, dep, None)
            return dep


def _observed(session: Session, backend: Backend, **facts: Any) -> None:
    """Write facts the portal observed (health, sync state) without an audit row or a version bump.

    They are not an operator's change: bumping the ETag every pass would turn every
    operator's PATCH into a 412, and the audit log would fill with read-backs.
    """
    session.execute(update(Backend).where(Backend.id == backend.id).values(**facts))
    for name, value in facts.items():
        if isinstance(value, ColumnElement):  # computed by the database: read again when used
            session.expire(backend, [name])
        else:
            set_committed_value(backend, name, value)


def _doubted() -> ColumnElement[str]:
    """The health a failed read-back leaves: one failure is doubt (``degraded``); only the health
    probes' run of failures (services/health_probe.py) turns a backend down. Decided in the UPDATE
    itself: the probes may have found it down while this read-back waited on the data plane."""
    return case((Backend.health.in_(HEALTH_DOWN), Backend.health), else_=literal(health_probe.DEGRADED))


def _sync_facts(report: ReconcileReport) -> dict[str, Any]:
    """The facts of this read-back, for the per-backend slice state (services/slice_status.py)."""
    now = datetime.now(UTC)
    if not report.reachable:
        return {"sync_state": "unreachable", "sync_detail": {"error": report.error or ""}, "synced_at": now}
    if report.in_sync:
        return {"sync_state": "in_sync", "sync_detail": {"version": report.found_version}, "synced_at": now}
    if report.repaired:
        # drift was found and repaired in this same pass: the data plane holds the rule set now
        return {
            "sync_state": "in_sync",
            "synced_at": now,
            "sync_detail": {
                "version": report.expected_version,
                "repaired": {
                    "found_version": report.found_version,
                    "drift": report.drift,
                    "tables": report.drift_tables,
                    "restarted_empty": report.restarted_empty,
                    "found": getattr(report, "found", None),
                },
            },
        }
    return {
        "sync_state": "out_of_sync",
        "synced_at": now,
        "sync_detail": {
            "expected_version": report.expected_version,
            "found_version": report.found_version,
            "drift": report.drift,
            "tables": report.drift_tables,
            "error": report.error or "",
        },
    }


class Finding(ReconcileReport):
    """A read-back with what it found, judged from what the data plane held (issue #26 item 4):

    - ``in_sync``: the rule set in force, nothing to do;
    - ``restarted_empty``: the data plane held none of our entries (it restarted, or was wiped);
    - ``interrupted_push``: it held entries and this backend's last deployment was cut mid-push
      (``interrupted_deployment``): part of that push's rule set, put back to the one in force;
    - ``drift``: it held entries that differ from the rule set in force otherwise (a hand edit).
    ``held`` is how many entries it held when read.
    """

    found: str = "in_sync"
    held: int | None = None
    interrupted_deployment: int | None = None


def _judge(session: Session, backend_id: int, plan: NativePlan, report: ReconcileReport) -> Finding:
    if report.in_sync or not report.reachable:
        return Finding(**dict(report), found="in_sync" if report.in_sync else "unreachable")
    d = report.drift
    # the diff is read-back -> expected: 'added' are expected entries it lacked, 'removed' ones
    # it held beyond them; what it held = the expected it had (total - added - modified) +
    # the modified ones (in their other form) + the removed ones
    held = sum(len(t) for t in plan.tables.values()) - d.get("added", 0) + d.get("removed", 0)
    last = session.scalar(
        select(Deployment).where(Deployment.backend_id == backend_id).order_by(Deployment.id.desc()).limit(1)
    )
    cut = (
        last is not None
        and last.kind != DeploymentKind.RECONCILE
        and last.status == DeploymentStatus.FAILED
        and last.error.startswith(INTERRUPTED)
    )
    if held <= 0:
        found = "restarted_empty"
    elif cut:
        found = "interrupted_push"
    else:
        found = "drift"
    return Finding(
        **{**dict(report), "restarted_empty": found == "restarted_empty"},
        found=found,
        held=held,
        interrupted_deployment=last.id if cut and last is not None else None,
    )


def reconcile(
    session: Session, backend: Backend, *, lock_wait_s: float = LOCK_WAIT_S, periodic: bool = False
) -> ReconcileReport | None:
    """Read the backend back; report and repair drift from the rule set in force.

    Holds the backend's lock for the whole read-back and repair; raises ``BusyError`` when a
    deployment holds it (its push is in flight: the data plane is half-written by design).
    Returns None when nothing was deployed yet or the driver cannot be reached at all.
    ``lock_wait_s``: how long to wait for the lock (the periodic loop passes 0: skip, next pass).
    ``periodic`` (the reconcile loop): a backend the health probes doubt or found down is left to
    them, and a failed read-back is not retried on a new connection. Either would hold the driver
    through its connect timeout (10 s for P4Runtime) while the probes, which wait behind it, ask the
    same question bounded and counted. Once the probes find the backend ok again, the next pass
    refills it.
    """
    with _locked(session, backend, lock_wait_s):
        expected = current_rule_set(session, backend.id)
        if expected is None:
            return None
        if periodic and backend.health == health_probe.DEGRADED:
            return None  # in doubt, not known unreachable: its last sync facts stand
        if periodic and backend.health in HEALTH_DOWN:
            _observed(
                session,
                backend,
                sync_state="unreachable",
                synced_at=datetime.now(UTC),
                sync_detail={"error": f"health {backend.health}: {backend.health_detail}"},
            )
            session.commit()
            return None
        stored = expected.plan
        plan = NativePlan.model_validate(stored)
        try:
            for attempt in range(2):
                with POOL.use(session, backend, read_back=True) as drv:
                    report = reconcile_once(drv, plan, relower=lambda p: _as_lowered_now(session, drv, expected, p))
                    health = drv.health()
                if report.reachable or attempt:
                    break
                # What this pass saw is written at once: a reconnect to a dead data plane waits out
                # the driver's connect timeout holding the driver (CI saw "degraded" 10 s late).
                doubted = backend.health != "ok"
                _observed(session, backend, health=_doubted(), health_detail=report.error or "")
                session.commit()
                if doubted or periodic:
                    break  # reconnecting is the health probes' part, bounded and counted
                # the data plane may have restarted under a session that is now dead: reconnect once
                POOL.discard(session, backend)
        except DriverError as exc:
            _observed(
                session,
                backend,
                health=_doubted(),
                health_detail=exc.message,
                sync_state="unreachable",
                sync_detail={"error": exc.message},
                synced_at=datetime.now(UTC),
            )
            session.commit()
            return None
        # judged from what it held (the plan as re-lowered now, if it was: _as_lowered_now stores it)
        judged = plan if expected.plan is stored else NativePlan.model_validate(expected.plan)
        report = _judge(session, backend.id, judged, report)
        _observed(
            session,
            backend,
            health="ok" if health.ok and report.reachable else _doubted(),
            health_detail=health.detail if report.reachable else (report.error or ""),
            **_sync_facts(report),
        )
        if not report.in_sync and report.reachable:
            now = datetime.now(UTC)
            dep = Deployment(
                backend_id=backend.id,
                rule_set_id=expected.id,
                previous_rule_set_id=expected.id,
                kind=DeploymentKind.RECONCILE,
                actor="reconciler",
                status=DeploymentStatus.SUCCEEDED if report.repaired else DeploymentStatus.FAILED,
                diff={
                    "drift": report.drift,
                    "tables": report.drift_tables,
                    "restarted_empty": report.restarted_empty,
                    "found": report.found,
                    "held": report.held,
                    "interrupted_deployment": report.interrupted_deployment,
                },
                error=report.error or "",
                finished_at=now,
                duration_s=report.outcome.duration_s if report.outcome else 0.0,
            )
            session.add(dep)
            record(
                session, "reconcile", "backend", backend.id, after=report.model_dump(mode="json", exclude={"outcome"})
            )
        session.commit()  # the repair record, its audit row and the sync facts together
        return report
