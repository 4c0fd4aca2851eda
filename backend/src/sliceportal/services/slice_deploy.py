"""Deploy one slice to every backend it is assigned to, in parallel (#14 item 5).

Each backend is deployed as ``deployments.deploy_changes`` does it alone -- under its own
advisory lock, with its own session, all or nothing on its data plane: a push that fails
part-way is rolled back by the driver to the rule set that was in force. So every backend
ends on the new rule set, on the previous one, or unchanged (its compiled plan already in
force), and the outcome says which, per backend. The slice's status per backend
(``GET /slices/{id}/status``) derives the same from facts.

Refusals that need no data plane (compile, capacity, capabilities, admission) are checked
for every backend before any push starts, so a refusal on one backend pushes nothing anywhere.
What that preflight compiled is handed to each backend's deploy, which compiles again only
when something it was compiled from changed in between (``deployments.Prepared``).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Literal

from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.db import BACKENDS_AT_ONCE, session_factory
from sliceportal.drivers.contract import LoweringPrefetcher, ProgressEvent
from sliceportal.models import Backend, Deployment, DeploymentStatus, Slice
from sliceportal.models.audit import Actor, set_actor
from sliceportal.services import admission, deployments, fanout_pool, footprint_push
from sliceportal.services.admission import Override
from sliceportal.services.backends import POOL
from sliceportal.services.compile_inputs import SharedCompiles
from sliceportal.services.errors import DomainError, InvalidError, UnavailableError

Where = Literal["new", "previous", "unchanged", "refused"]


@dataclass(frozen=True)
class BackendOutcome:
    backend_id: int
    backend_name: str
    where: Where  # the rule set the backend is on now: the new one, the previous one, or unchanged
    status: str  # succeeded / failed / unchanged / refused
    rule_set: int | None  # the number of the rule set in force on it now (None: nothing deployed)
    deployment_id: int | None
    error: str = ""


ProgressFn = Callable[[int, ProgressEvent], None]


def preflight(session: Session, slice_: Slice, override: Override | None) -> list[deployments.Prepared]:
    """Everything that can refuse without a data plane, for every backend, before any push;
    what it compiled, by backend, for ``deploy_slice``."""
    backends = sorted(slice_.backends, key=lambda b: b.id)
    if not backends:
        raise InvalidError(
            f"slice {slice_.name} is assigned to no backend; assign it (backend_ids) first", field="backend_ids"
        )
    for b in backends:
        deployments._refuse_if_down(session, b)
    # backends with the same slices compile once (compile_inputs.SharedCompiles); each key is
    # read before its compile, and admission reads after them all: what it admits is at least
    # as new as every key, so a deploy whose key still holds need not check it again
    _prefetch(session, backends)
    shared = SharedCompiles()
    keys = footprint_push.input_keys(session, [b.id for b in backends])  # one statement, before every compile
    prepared = [deployments.prepare(session, b, shared, keys[b.id]) for b in backends]
    if override is None:
        # one check for all: the slices' members and tenants are read once, and a refusal names
        # every backend's reasons at once (``subject`` only says whose fields a refusal names:
        # a backend's, as when each was checked alone; nothing is audited without an override)
        admission.check(session, backends, override=None, action="deploy", subject=backends[0])
        prepared = [dataclasses.replace(p, admitted=True) for p in prepared]
    session.rollback()  # admission flushes: nothing of the preflight is kept
    return prepared


def _prefetch(session: Session, backends: Sequence[Backend]) -> None:
    """What lowering reads from each data plane (``LoweringPrefetcher``: the priorities a P4
    switch holds, unknown to a process's driver before its first push there), read from
    ``BACKENDS_AT_ONCE`` of them at a time: the preflight lowers for one backend after
    another, and its reads, one after another, were a first deploy's wait before any push."""

    def one(backend: Backend) -> None:
        with POOL.use(session, backend) as drv:  # the session only names the database here
            if isinstance(drv, LoweringPrefetcher):
                drv.prefetch()

    if len(backends) > 1:
        with ThreadPoolExecutor(min(len(backends), BACKENDS_AT_ONCE), thread_name_prefix="prefetch") as pool:
            list(pool.map(one, backends))


def _one(
    sessions: sessionmaker[Session],
    actor: Actor,
    prepared: deployments.Prepared,
    override: Override | None,
    progress: ProgressFn | None,
) -> BackendOutcome:
    backend_id, name = prepared.backend_id, prepared.backend_name
    with sessions() as session:
        set_actor(session, actor)
        backend = deployments.unread(session, backend_id)  # read under its lock
        try:
            dep = deployments.deploy_changes(
                session,
                backend,
                actor.name,
                (lambda e: progress(backend_id, e)) if progress else None,
                override=override,
                prepared=prepared,
            )
        except DomainError as exc:
            session.rollback()
            current = deployments.current_rule_set(session, backend_id)
            return BackendOutcome(
                backend_id, name, "refused", "refused", current.number if current else None, None, exc.detail
            )
        if isinstance(dep, deployments.Unchanged):
            return BackendOutcome(backend_id, name, "unchanged", "unchanged", dep.rule_set, None)
        return _outcome(session, backend_id, name, dep)


def _outcome(session: Session, backend_id: int, name: str, dep: Deployment) -> BackendOutcome:
    if dep.status == DeploymentStatus.SUCCEEDED:
        return BackendOutcome(backend_id, name, "new", "succeeded", deployments.finished_number(session, dep), dep.id)
    current = deployments.current_rule_set(session, backend_id)
    # the driver restored the previous rule set (rolled_back); if even that failed the
    # reconcile loop repairs it to the rule set in force, which is still the previous one
    return BackendOutcome(
        backend_id,
        name,
        "previous",
        "failed",
        current.number if current else None,
        dep.id,
        dep.error + ("" if dep.rolled_back else " (restore failed: the reconcile loop repairs it)"),
    )


def deploy_slice(
    sessions: sessionmaker[Session],
    actor: Actor,
    prepared: list[deployments.Prepared],
    *,
    override: Override | None = None,
    progress: ProgressFn | None = None,
    lanes: fanout_pool.Lanes = fanout_pool.NO_LANES,
) -> list[BackendOutcome]:
    """Deploy every backend ``preflight`` prepared at once (a thread and a session each), in
    this process or, when there are enough of them, spread over ``lanes`` (the ``fanout_*``
    settings); outcomes in its order (by backend id)."""
    if not prepared:
        return []
    if lanes.used_for(len(prepared)):
        return _in_lanes(sessions, actor, prepared, override, progress, lanes.count)
    return _in_threads(sessions, actor, prepared, override, progress)


def _in_threads(
    sessions: sessionmaker[Session],
    actor: Actor,
    prepared: Sequence[deployments.Prepared],
    override: Override | None,
    progress: ProgressFn | None,
) -> list[BackendOutcome]:
    # bounded by the connections each push holds (core/db.BACKENDS_AT_ONCE)
    with ThreadPoolExecutor(min(len(prepared), BACKENDS_AT_ONCE), thread_name_prefix="slice-deploy") as pool:
        futures = [pool.submit(_one, sessions, actor, p, override, progress) for p in prepared]
        return [f.result() for f in futures]


def _in_lanes(
    sessions: sessionmaker[Session],
    actor: Actor,
    prepared: list[deployments.Prepared],
    override: Override | None,
    progress: ProgressFn | None,
    lanes: int,
) -> list[BackendOutcome]:
    pool = fanout_pool.pool(lanes, preload=[__name__])
    by_lane: dict[int, list[deployments.Prepared]] = {}
    for p in prepared:
        by_lane.setdefault(pool.lane_of(p.backend_id), []).append(p)
    # one piece of work per lane: pickled at once, the backends' shared compile (SharedCompiles)
    # and plan travel once, not once per backend
    url = sessions.kw["bind"].url.render_as_string(hide_password=False)
    work = [(lane, (url, actor, chunk, override, progress is not None)) for lane, chunk in by_lane.items()]
    on_event = (lambda e: progress(e[0], e[1])) if progress is not None else None
    try:
        results = pool.run(_deploy_in_lane, work, on_event)
    except fanout_pool.LaneDied as exc:
        raise UnavailableError(
            f"{exc}; the pushes it had begun are finished by the controller (see each backend's deployments)"
        ) from exc
    outcome = {o.backend_id: o for chunk in results for o in chunk}
    return [outcome[p.backend_id] for p in prepared]


def _deploy_in_lane(
    url: str,
    actor: Actor,
    prepared: list[deployments.Prepared],
    override: Override | None,
    with_progress: bool,
    emit: fanout_pool.Emit,
) -> list[BackendOutcome]:
    """A lane's part of a fan-out (``fanout_pool``): as ``_in_threads``, on the lane's own pool."""
    progress: ProgressFn | None = (lambda backend_id, e: emit((backend_id, e))) if with_progress else None
    return _in_threads(session_factory(url), actor, prepared, override, progress)
