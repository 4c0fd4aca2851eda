"""Rule preview, deployment (with streamed progress), history, rollback and reconcile.

A deploy or rollback is a job whose record is its deployment row (``services/jobs.py``): the
request waits for it and answers with the finished row (or streams its progress), or, with
``Prefer: respond-async``, answers 202 with the row's ``Location`` as soon as the row exists
and the push goes on in a thread of this process. Either way the push survives this process:
when it dies mid-push the leading controller finishes the job.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
from collections.abc import Callable, Iterator
from dataclasses import asdict
from typing import Annotated, Any

from fastapi import Header, Request
from fastapi.responses import JSONResponse, Response, StreamingResponse
from sqlalchemy import select
from sqlalchemy.exc import InterfaceError, OperationalError

from sliceportal.api import ratelimit
from sliceportal.api.admission import AdmissionOverride
from sliceportal.api.crud import get_scoped, page
from sliceportal.api.deps import Deployer, NotTenant, Principal, SessionDep, wants_async
from sliceportal.api.errors import ApiError, domain_problem, not_found
from sliceportal.api.routing import session_router
from sliceportal.models import Backend, Deployment, RuleSet, Slice
from sliceportal.models.audit import Actor, set_actor
from sliceportal.schemas.common import ListQuery, Page, PathId
from sliceportal.schemas.deployments import (
    DeploymentPublic,
    DeployUnchangedPublic,
    EnforcementGapPublic,
    EquivalencePublic,
    PreviewPublic,
    RollbackRequest,
    RuleSetPublic,
    SliceDeployBackendPublic,
    SliceDeployPublic,
    TableUsagePublic,
)
from sliceportal.services import deployments as svc
from sliceportal.services import fanout_pool, slice_deploy
from sliceportal.services.admission import Override
from sliceportal.services.equivalence import to_json as equivalence_json
from sliceportal.services.errors import DomainError

log = logging.getLogger(__name__)
router = session_router(prefix="/backends/{backend_id}", tags=["deployments"])
slices = session_router(prefix="/slices/{slice_id}", tags=["deployments"])
NDJSON = "application/x-ndjson"


@router.get("/preview", response_model=PreviewPublic, dependencies=[ratelimit.PREVIEW])
def preview(backend_id: PathId, _: NotTenant, session: SessionDep) -> PreviewPublic:
    backend = get_scoped(session, Backend, backend_id, None, "backend")
    p = svc.preview(session, backend)
    c = p.compiled
    return PreviewPublic(
        backend_id=backend.id,
        driver=backend.driver,
        version=p.plan.version,
        lanes=c.ir.lanes,
        paths=c.ir.paths,
        flows=c.flows,
        rules_before=c.rules_before,
        rules_after=c.rules_after,
        usage={t: TableUsagePublic(used=u.used, capacity=u.capacity) for t, u in p.plan.usage.items()},
        slices=[json.loads(json.dumps(asdict(s))) for s in c.slices],
        ir=c.ir.to_json(),
        tables=p.plan.tables,
        equivalence=None
        if p.equivalence is None
        else EquivalencePublic.model_validate(equivalence_json(p.equivalence)),
        enforcement=[EnforcementGapPublic.model_validate(g.to_json()) for g in p.enforcement],
    )


def unchanged_public(u: svc.Unchanged) -> DeployUnchangedPublic:
    return DeployUnchangedPublic(
        backend_id=u.backend_id,
        rule_set=u.rule_set,
        digest=u.digest,
        detail=f"already deployed as rule set {u.rule_set}",
    )


def _result(dep: Deployment | svc.Unchanged) -> dict[str, Any]:
    body = unchanged_public(dep) if isinstance(dep, svc.Unchanged) else DeploymentPublic.model_validate(dep)
    return body.model_dump(mode="json")


Emit = Callable[[dict[str, Any]], None]


def _error_event(exc: Exception, what: str) -> dict[str, Any]:
    """A streamed job's failure as its last event, with the status the same request would
    have answered without streaming (called inside the ``except`` that caught it)."""
    if isinstance(exc, DomainError):
        p = domain_problem(exc)
        return {"status": p.status, "title": p.title, "detail": p.detail, **(getattr(exc, "extensions", None) or {})}
    if isinstance(exc, ApiError):
        return {"status": exc.status, "title": exc.title, "detail": exc.detail}
    if isinstance(exc, OperationalError | InterfaceError):
        return {
            "status": 503,
            "title": "Database unavailable",
            "detail": f"the portal's database became unreachable: {str(exc).splitlines()[0]}; "
            "the deployment (a job) is finished and recorded once it is back: read its row",
        }
    log.exception("streamed %s failed", what)  # a bug must still end the stream, not leave the client waiting
    return {"status": 500, "title": "Internal error", "detail": f"{type(exc).__name__}: {exc}"}


class _Events:
    """NDJSON events from a worker thread to the response body: ``emit`` as they happen,
    ``close`` once after the last (the body ends there)."""

    def __init__(self) -> None:
        self._queue: queue.Queue[str | None] = queue.Queue()

    def emit(self, event: dict[str, Any]) -> None:
        self._queue.put(json.dumps(event))

    def close(self) -> None:
        self._queue.put(None)

    def lines(self) -> Iterator[str]:
        while (item := self._queue.get()) is not None:
            yield item + "\n"


def _ndjson(what: str, run: Callable[[Emit], dict[str, Any]]) -> StreamingResponse:
    """Run ``run`` in a worker thread (with sessions of its own) and stream NDJSON: the progress
    events it emits as they happen, then exactly one ``result`` (what it returns) or ``error``
    event, whatever happens. The push is a job: a client that goes away does not cut it."""
    events = _Events()

    def work() -> None:
        try:
            events.emit({"event": "result", **run(events.emit)})
        except Exception as exc:
            events.emit({"event": "error", **_error_event(exc, what)})
        finally:
            events.close()

    threading.Thread(target=work, name=what, daemon=True).start()
    return StreamingResponse(events.lines(), media_type=NDJSON)


class _Job:
    """A deploy or rollback of one backend, run in a thread of this process with a session of its
    own; the request waits only for its start: ``started()`` is the first of "refused" (before any
    row: the request answers as it would without streaming or ``Prefer``), "unchanged" and "the
    row is committed". Compile, admission and lowering run once, in the job (a stream used to be
    checked by a preview in the request first, compiling twice). With ``stream`` the progress
    events and then exactly one ``result`` or ``error`` event go to ``events()`` as NDJSON lines."""

    def __init__(
        self,
        request: Request,
        backend_id: int,
        principal: Principal,
        rollback_to: int | None,
        override: Override | None,
        *,
        stream: bool,
    ) -> None:
        self._args = (request.app.state.sessionmaker, backend_id, principal, rollback_to, override)
        self._started: queue.Queue[tuple[str, object]] = queue.Queue()
        self._events = _Events() if stream else None
        threading.Thread(target=self._work, name=f"deploy-job-{backend_id}", daemon=True).start()

    def _emit(self, event: dict[str, Any]) -> None:
        if self._events is not None:
            self._events.emit(event)

    def _progress(self, e: object) -> None:
        self._emit({"event": "progress", **e.model_dump()})  # type: ignore[attr-defined]

    def _work(self) -> None:
        sessions, backend_id, principal, rollback_to, override = self._args
        progress = self._progress if self._events is not None else None
        try:
            with sessions() as s:
                set_actor(s, Actor(principal.user_id, principal.username, principal.via))
                backend = get_scoped(s, Backend, backend_id, None, "backend")

                def on_job(dep_id: int) -> None:
                    self._started.put(("job", dep_id))

                dep = (
                    svc.deploy_changes(s, backend, principal.username, progress, override=override, on_job=on_job)
                    if rollback_to is None
                    else svc.rollback(s, backend, rollback_to, principal.username, progress, on_job=on_job)
                )
                self._emit({"event": "result", **_result(dep)})
                self._started.put(("done", dep if isinstance(dep, svc.Unchanged) else None))
        except Exception as exc:  # before its row: the request answers it; after: the row records it
            if self._events is not None:  # (a bug is logged there)
                self._emit({"event": "error", **_error_event(exc, f"deploy-{backend_id}")})
            elif not isinstance(exc, DomainError | ApiError):
                log.exception("deployment job of backend %s failed", backend_id)
            self._started.put(("error", exc))
        finally:
            if self._events is not None:
                self._events.close()

    def started(self) -> tuple[str, object]:
        """The first of ("error", exception), ("done", Unchanged | None), ("job", deployment id);
        raises the exception of a job refused before its row existed."""
        what, value = self._started.get()
        if what == "error":
            assert isinstance(value, Exception)
            raise value
        return what, value

    def events(self) -> Iterator[str]:
        assert self._events is not None
        return self._events.lines()


def _stream(
    request: Request, backend_id: int, principal: Principal, rollback_to: int | None, override: Override | None = None
) -> StreamingResponse:
    """A deploy (or rollback) of one backend, streamed once it started (refusals answer 4xx)."""
    job = _Job(request, backend_id, principal, rollback_to, override, stream=True)
    job.started()
    return StreamingResponse(job.events(), media_type=NDJSON)


def _start_job(
    request: Request,
    session: SessionDep,
    backend_id: int,
    principal: Principal,
    rollback_to: int | None,
    override: Override | None,
) -> Response:
    """``Prefer: respond-async``: answer once the job's row exists: 202 with ``Location``;
    refusals (before any row) answer as without the header."""
    what, value = _Job(request, backend_id, principal, rollback_to, override, stream=False).started()
    if isinstance(value, svc.Unchanged):
        return JSONResponse(unchanged_public(value).model_dump(mode="json"), status_code=200)
    assert what == "job" and isinstance(value, int)
    dep = session.get_one(Deployment, value, populate_existing=True)
    body = DeploymentPublic.model_validate(dep).model_dump(mode="json")
    location = request.app.url_path_for("read_deployment", backend_id=backend_id, deployment_id=value)
    return JSONResponse(body, status_code=202, headers={"Location": str(location)})


ASYNC_RESPONSE: dict[int | str, dict[str, Any]] = {
    202: {
        "model": DeploymentPublic,
        "description": "with Prefer: respond-async: the job is running; Location names "
        "its deployment row (GET it for status and progress)",
    }
}


@router.post(
    "/deployments",
    response_model=DeploymentPublic,
    status_code=201,
    dependencies=[ratelimit.DEPLOY],
    responses={
        200: {
            "model": DeployUnchangedPublic,
            "content": {NDJSON: {}},
            "description": "an identical redeploy (nothing pushed: already deployed as rule "
            "set N); or, with Accept: application/x-ndjson, progress events then the result",
        },
        **ASYNC_RESPONSE,
    },
)
def deploy(
    backend_id: PathId,
    principal: Deployer,
    session: SessionDep,
    request: Request,
    override: AdmissionOverride,
    accept: Annotated[str | None, Header()] = None,
    prefer: Annotated[str | None, Header()] = None,
) -> Deployment | Response:
    """Compile, lower and push every slice assigned to the backend, all or nothing.

    When the compiled plan equals the rule set in force the answer is 200
    ``{"status": "unchanged", "rule_set": N}``: no rule set is written and nothing is pushed.
    Admission control runs first: 409 with the computation (``admission``) when the slices on
    the backend's link do not fit; an operator may send ``Admission-Override: <reason>``.
    With ``Accept: application/x-ndjson`` the progress events stream as they happen. With
    ``Prefer: respond-async`` the answer is 202 as soon as the deployment row exists
    (``Location``: the row; it reads ``running`` with its progress until it ends).
    """
    backend = get_scoped(session, Backend, backend_id, None, "backend")
    if wants_async(prefer):
        return _start_job(request, session, backend_id, principal, None, override)
    if accept and NDJSON in accept:
        session.close()  # release the request's connection now: the stream may outlive the database
        return _stream(request, backend_id, principal, None, override)
    dep = svc.deploy_changes(session, backend, principal.username, override=override)
    if isinstance(dep, svc.Unchanged):
        return JSONResponse(unchanged_public(dep).model_dump(mode="json"), status_code=200)
    return dep


@router.get("/deployments", response_model=Page[DeploymentPublic])
def list_deployments(
    backend_id: PathId, _: NotTenant, session: SessionDep, params: ListQuery
) -> Page[DeploymentPublic]:
    get_scoped(session, Backend, backend_id, None, "backend")
    params = params.model_copy(update={"sort": params.sort or "-id"})
    rows, count = page(
        session,
        select(Deployment).where(Deployment.backend_id == backend_id),
        params,
        {"id": Deployment.id, "created_at": Deployment.created_at, "status": Deployment.status},
    )
    return Page(data=[DeploymentPublic.model_validate(d) for d in rows], count=count)


@router.get("/deployments/{deployment_id}", response_model=DeploymentPublic)
def read_deployment(backend_id: PathId, deployment_id: PathId, _: NotTenant, session: SessionDep) -> Deployment:
    """One deployment: a job while ``running`` (``runner``, ``heartbeat_at``, ``progress``), its outcome after."""
    get_scoped(session, Backend, backend_id, None, "backend")
    dep = session.scalar(select(Deployment).where(Deployment.id == deployment_id, Deployment.backend_id == backend_id))
    if dep is None:
        raise not_found("deployment", deployment_id)
    return dep


@router.get("/rule-sets/{number}", response_model=RuleSetPublic)
def read_rule_set(backend_id: PathId, number: PathId, _: NotTenant, session: SessionDep) -> RuleSet:
    rs = session.scalar(select(RuleSet).where(RuleSet.backend_id == backend_id, RuleSet.number == number))
    if rs is None:
        raise not_found("rule set", number)
    return rs


@router.post(
    "/rollback",
    response_model=DeploymentPublic,
    status_code=201,
    responses={**ASYNC_RESPONSE},
    dependencies=[ratelimit.DEPLOY],
)
def rollback(
    backend_id: PathId,
    body: RollbackRequest,
    principal: Deployer,
    session: SessionDep,
    request: Request,
    accept: Annotated[str | None, Header()] = None,
    prefer: Annotated[str | None, Header()] = None,
) -> Deployment | Response:
    """Push an earlier rule set again (a new deployment of kind ``rollback``); ``Prefer:
    respond-async`` as for a deploy."""
    backend = get_scoped(session, Backend, backend_id, None, "backend")
    if wants_async(prefer):
        return _start_job(request, session, backend_id, principal, body.rule_set, None)
    if accept and NDJSON in accept:
        session.close()  # release the request's connection now: the stream may outlive the database
        return _stream(request, backend_id, principal, body.rule_set)
    return svc.rollback(session, backend, body.rule_set, principal.username)


@router.post("/reconcile", response_model=dict[str, object], dependencies=[ratelimit.DEPLOY])
def reconcile(backend_id: PathId, _: Deployer, session: SessionDep) -> dict[str, object]:
    """Read the data plane back now; report and repair drift from the last good rule set."""
    backend = get_scoped(session, Backend, backend_id, None, "backend")
    report = svc.reconcile(session, backend)
    if report is None:
        return {
            "in_sync": None,
            "detail": "nothing deployed yet, or the data plane is unreachable",
            "health": backend.health,
            "health_detail": backend.health_detail,
        }
    return report.model_dump(mode="json", exclude={"outcome"})


def _slice_result(slice_id: int, outcomes: list[slice_deploy.BackendOutcome]) -> SliceDeployPublic:
    return SliceDeployPublic(
        slice_id=slice_id,
        ok=all(o.where in ("new", "unchanged") for o in outcomes),
        backends=[SliceDeployBackendPublic.model_validate(o, from_attributes=True) for o in outcomes],
    )


@slices.post(
    "/deploy",
    response_model=SliceDeployPublic,
    responses={
        200: {
            "content": {NDJSON: {}},
            "description": "the outcome per backend; with Accept: "
            "application/x-ndjson, progress events per backend, then the result",
        }
    },
)
def deploy_slice(
    slice_id: PathId,
    principal: Deployer,
    session: SessionDep,
    request: Request,
    override: AdmissionOverride,
    accept: Annotated[str | None, Header()] = None,
) -> SliceDeployPublic | StreamingResponse:
    """Deploy the slice to every backend it is assigned to, in parallel, each under its own lock.

    Every backend ends on the new rule set, on its previous one (a failed push is rolled back),
    or unchanged; the result says which per backend (so does ``GET /slices/{id}/status``).
    Refusals (compile, capacity, capabilities, admission) are checked on every backend before
    any push: then nothing is pushed anywhere.
    """
    s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    prepared = slice_deploy.preflight(session, s, override)
    session.close()  # each backend's worker has a session of its own
    actor = Actor(principal.user_id, principal.username, principal.via)
    sessions = request.app.state.sessionmaker
    settings = request.app.state.settings
    lanes = fanout_pool.Lanes(settings.fanout_processes, settings.fanout_min_backends)
    if not (accept and NDJSON in accept):
        return _slice_result(
            slice_id, slice_deploy.deploy_slice(sessions, actor, prepared, override=override, lanes=lanes)
        )

    def run(emit: Emit) -> dict[str, Any]:
        def progress(backend_id: int, e: object) -> None:
            emit({"event": "progress", "backend_id": backend_id, **e.model_dump()})  # type: ignore[attr-defined]

        outcomes = slice_deploy.deploy_slice(
            sessions, actor, prepared, override=override, progress=progress, lanes=lanes
        )
        return _slice_result(slice_id, outcomes).model_dump(mode="json")

    return _ndjson(f"deploy-slice-{slice_id}", run)
