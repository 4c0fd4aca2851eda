"""KPIs: time ranges per slice / lane, current values, SLA violations, and the live stream."""

from __future__ import annotations

from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Any, Literal

from fastapi import Query, Request, Response
from fastapi.sse import EventSourceResponse, ServerSentEvent
from pydantic import AwareDatetime, TypeAdapter
from sqlalchemy import func, or_, select
from sqlalchemy.orm import Session

from sliceportal.api.crud import check_scoped, page, scoped
from sliceportal.api.deps import Reader, SessionDep, StreamReader
from sliceportal.api.errors import ApiError, not_found
from sliceportal.api.responses import plain_json
from sliceportal.api.routing import session_router
from sliceportal.kpi.bins import binned_samples
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import KpiPoint, Source, combine_lanes
from sliceportal.kpi.sla import counter_totals, within_sla
from sliceportal.models import KpiSample, SlaViolation, Slice
from sliceportal.models.queries import newest_samples
from sliceportal.models.slicing import slice_backend
from sliceportal.schemas.common import ListQuery, Page, PathId, QueryId
from sliceportal.schemas.kpis import (
    EvidenceSample,
    KpiSamplePublic,
    SlaBackendSummary,
    SlaSummary,
    SlaViolationExplained,
    SlaViolationPublic,
)

router = session_router(tags=["kpis"])
MAX_POINTS = 20_000
MAX_EXPLAIN = 5_000


SAMPLE_FIELDS = tuple(KpiSamplePublic.model_fields)
SAMPLE_COLUMNS = tuple(getattr(KpiSample, name) for name in SAMPLE_FIELDS)
SAMPLES = TypeAdapter(list[KpiSamplePublic])


@router.get("/slices/{slice_id}/kpis", response_model=list[KpiSamplePublic])
def slice_kpis(
    slice_id: PathId,
    principal: Reader,
    session: SessionDep,
    since: Annotated[
        AwareDatetime | None, Query(description="default: the last 5 minutes; with a time zone (2026-01-01T00:00:00Z)")
    ] = None,
    until: AwareDatetime | None = None,
    lane: Annotated[int | None, Query(ge=0, le=7)] = None,
    backend_id: QueryId = None,
    source: Annotated[Source | None, Query(description="only this source's samples")] = None,
    group_by: Annotated[
        Literal["lane", "backend"],
        Query(
            description="lane: one sample per (backend, lane, interval); "
            "backend: one per (backend, interval), the slice's lanes combined"
        ),
    ] = "lane",
    step_s: Annotated[
        int | None,
        Query(
            ge=2,
            le=86_400,
            description=(
                "combine the samples of each (backend, lane) into intervals of this many seconds "
                "(for long ranges: 24 h of 1 s samples would be too many points)"
            ),
        ),
    ] = None,
) -> Response:
    check_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    until = until or datetime.now(UTC)
    since = since or until - timedelta(minutes=5)
    if since > until:
        raise ApiError(422, "Validation failed", "since is after until", field="since")
    where = [KpiSample.slice_id == slice_id, KpiSample.ts > since, KpiSample.ts <= until]
    if lane is not None:
        where.append(KpiSample.lane == lane)
    if backend_id is not None:
        where.append(KpiSample.backend_id == backend_id)
    if source is not None:
        where.append(KpiSample.source == source)
    if step_s is not None:
        samples = [
            KpiSamplePublic.model_validate(p.model_dump()) for p in binned_samples(session, where, step_s, MAX_POINTS)
        ]
    else:
        newest = (
            select(*SAMPLE_COLUMNS)
            .where(*where)
            .order_by(KpiSample.ts.desc(), KpiSample.backend_id, KpiSample.lane, KpiSample.source)
            .limit(MAX_POINTS)
            .subquery()
        )
        # newest first under the cap (a long range loses its oldest samples, not its newest),
        # answered oldest first. A 5-minute window is ~1 200 rows per backend: plain rows (Core,
        # no ORM loading) written as JSON without a model each (api/responses.plain_json).
        c = newest.c
        result = session.connection().execute(select(newest).order_by(c.ts, c.backend_id, c.lane, c.source))
        rows = [dict(zip(SAMPLE_FIELDS, r, strict=True)) for r in result]
        if group_by == "lane":
            return plain_json(rows)
        samples = SAMPLES.validate_python(rows)
    return plain_json(SAMPLES.dump_python(samples if group_by == "lane" else _by_backend(samples)))


def _by_backend(samples: list[KpiSamplePublic]) -> list[KpiSamplePublic]:
    """One sample per (backend, source, interval): the lanes combined (``lane`` null)."""
    groups: dict[tuple[int, str, datetime], list[KpiPoint]] = {}
    for x in samples:
        groups.setdefault((x.backend_id, x.source, x.ts), []).append(KpiPoint.model_validate(x.model_dump()))
    return [KpiSamplePublic.model_validate(combine_lanes(g).model_dump() | {"lane": None}) for g in groups.values()]


@router.get("/slices/{slice_id}/kpis/current", response_model=list[KpiSamplePublic])
def current_kpis(
    slice_id: PathId,
    principal: Reader,
    session: SessionDep,
    backend_id: QueryId = None,
    source: Annotated[Source | None, Query(description="only this source's samples")] = None,
) -> list[KpiSample]:
    """The newest sample of each (backend, lane, source)."""
    check_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    return [s for s in newest_samples(session, slice_id, backend_id) if source is None or s.source == source]


@router.get("/violations", response_model=Page[SlaViolationPublic])
def violations(
    principal: Reader,
    session: SessionDep,
    params: ListQuery,
    slice_id: QueryId = None,
    backend_id: QueryId = None,
    open_only: bool = False,
    since: Annotated[AwareDatetime | None, Query(description="only violations still open at or after this")] = None,
    until: Annotated[AwareDatetime | None, Query(description="only violations started before this")] = None,
) -> Page[SlaViolationPublic]:
    """SLA violations, newest first; ``since`` / ``until`` give the history of a window (e.g. the last hour)."""
    stmt = select(SlaViolation).join(Slice, Slice.id == SlaViolation.slice_id)
    stmt = scoped(stmt, Slice, principal.tenant_scope)
    if slice_id is not None:
        stmt = stmt.where(SlaViolation.slice_id == slice_id)
    if backend_id is not None:
        stmt = stmt.where(SlaViolation.backend_id == backend_id)
    if open_only:
        stmt = stmt.where(SlaViolation.ended_at.is_(None))
    if since is not None and until is not None and since > until:
        raise ApiError(422, "Validation failed", "since is after until", field="since")
    if since is not None:
        stmt = stmt.where(or_(SlaViolation.ended_at.is_(None), SlaViolation.ended_at >= since))
    if until is not None:
        stmt = stmt.where(SlaViolation.started_at < until)
    params = params.model_copy(update={"sort": params.sort or "-started_at"})
    rows, count = page(
        session,
        stmt,
        params,
        {"id": SlaViolation.id, "started_at": SlaViolation.started_at, "metric": SlaViolation.metric},
    )
    return Page(data=[SlaViolationPublic.model_validate(v) for v in rows], count=count)


@router.get("/violations/{violation_id}/explain", response_model=SlaViolationExplained)
def explain_violation(violation_id: PathId, principal: Reader, session: SessionDep) -> SlaViolationExplained:
    """Why a violation opened and closed: the samples that did it, the hold-down, the rule set in
    force on that backend, its counters, and the lane's samples around it from the source that
    judged it (the slice's lanes combined for the guaranteed rate)."""
    stmt = scoped(
        select(SlaViolation).join(Slice, Slice.id == SlaViolation.slice_id).where(SlaViolation.id == violation_id),
        Slice,
        principal.tenant_scope,
    )
    v = session.scalar(stmt)
    if v is None:
        raise not_found("violation", violation_id)
    ev = v.evidence or {}
    hold = ev.get("hold_down") or {"open_after": 1, "close_after": 1}
    opened = [EvidenceSample.model_validate(x) for x in ev.get("opened_by", [])]
    closed = [EvidenceSample.model_validate(x) for x in ev.get("closed_by", [])]
    step = timedelta(seconds=1)
    first = min([x.ts for x in opened] + [v.started_at]) - step * 2
    last = max([x.ts for x in closed] + [v.ended_at or datetime.now(UTC)]) + step * 2
    rows = session.scalars(
        select(KpiSample)
        .where(
            KpiSample.slice_id == v.slice_id,
            KpiSample.backend_id == v.backend_id,
            KpiSample.ts > first,
            KpiSample.ts <= last,
            *([KpiSample.lane == v.lane] if v.lane is not None else []),
            # the source that judged it: another one's samples of the same lane (the data plane's
            # counters beside the testbed's meter) would interleave with them in one line
            *([KpiSample.source == ev["source"]] if ev.get("source") else []),
        )
        .order_by(KpiSample.ts, KpiSample.lane, KpiSample.source)
        .limit(MAX_EXPLAIN)
    )
    samples = [KpiSamplePublic.model_validate(r) for r in rows]
    if v.lane is None:
        samples = _by_backend(samples)
    return SlaViolationExplained(
        **SlaViolationPublic.model_validate(v).model_dump(),
        opened_by=opened,
        closed_by=closed,
        hold_down=hold,
        rule_set=ev.get("rule_set"),
        counters=_plane_counters(session, v, opened) or ev.get("counters") or {},
        source=ev.get("source"),
        samples=samples,
    )


def _plane_counters(session: Session, v: SlaViolation, opened: list[EvidenceSample]) -> dict[str, Any] | None:
    """The data plane's own counters over the opening intervals of a violation another source
    judged (the testbed's meter, probes): the collector's samples of the lane then, summed; None
    when it judged itself or has no samples there (the evidence's own counters stand)."""
    if (v.evidence or {}).get("source") in (None, "counters") or not opened:
        return None
    span = v.started_at, max(x.ts for x in opened)
    rows = list(
        session.scalars(
            select(KpiSample).where(
                KpiSample.slice_id == v.slice_id,
                KpiSample.backend_id == v.backend_id,
                KpiSample.source == "counters",
                KpiSample.ts > span[0],
                KpiSample.ts <= span[1],
                *([KpiSample.lane == v.lane] if v.lane is not None else []),
            )
        )
    )
    return counter_totals(rows) if rows else None


@router.get("/slices/{slice_id}/sla", response_model=SlaSummary)
def slice_sla(
    slice_id: PathId,
    principal: Reader,
    session: SessionDep,
    since: Annotated[AwareDatetime | None, Query(description="default: the last hour")] = None,
    until: AwareDatetime | None = None,
) -> SlaSummary:
    """Per backend, over a window: the intervals measured, the share of them within the SLA
    (not inside a violation), and the violations that overlapped it."""
    check_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    until = until or datetime.now(UTC)
    since = since or until - timedelta(hours=1)
    if since > until:
        raise ApiError(422, "Validation failed", "since is after until", field="since")
    counted = {b: (total, bad) for b, total, bad in within_sla(session, slice_id, since, until)}
    overlapping = (
        (SlaViolation.slice_id == slice_id)
        & (SlaViolation.started_at < until)
        & (SlaViolation.ended_at.is_(None) | (SlaViolation.ended_at >= since))
    )
    per_backend = {
        b: (n, n_open)
        for b, n, n_open in session.execute(
            select(SlaViolation.backend_id, func.count(), func.count().filter(SlaViolation.ended_at.is_(None)))
            .where(overlapping)
            .group_by(SlaViolation.backend_id)
        )
    }
    assigned = session.scalars(select(slice_backend.c.backend_id).where(slice_backend.c.slice_id == slice_id))
    backends = sorted(set(counted) | set(per_backend) | set(assigned))
    return SlaSummary(
        slice_id=slice_id,
        since=since,
        until=until,
        backends=[
            SlaBackendSummary(
                backend_id=b,
                intervals=counted.get(b, (0, 0))[0],
                within_sla_pct=(
                    round(100.0 * (1 - counted[b][1] / counted[b][0]), 2) if counted.get(b, (0, 0))[0] else None
                ),
                violations=per_backend.get(b, (0, 0))[0],
                open_violations=per_backend.get(b, (0, 0))[1],
            )
            for b in backends
        ],
    )


@router.get("/kpis/stream", response_class=EventSourceResponse)
async def stream(
    request: Request,
    principal: StreamReader,
    slice_id: Annotated[list[int] | None, Query(description="only these slices")] = None,
) -> AsyncIterator[ServerSentEvent]:
    """Live KPI points as server-sent events (``event: kpi``), each a JSON list of points.

    A tenant receives its own slices' points only: the filter is applied on the server.
    FastAPI frames the events, sends a keep-alive comment every 15 s of silence (proxies and
    the browser see the stream is alive) and asks proxies not to buffer.
    """
    hub: KpiHub = request.app.state.kpi_hub
    sub = hub.subscribe(principal.tenant_scope, frozenset(slice_id) if slice_id else None)
    try:
        yield ServerSentEvent(retry=2000, comment="reconnect after 2 s")
        while True:
            points = await sub.queue.get()
            # each point encoded once, whatever the number of subscribers
            yield ServerSentEvent(event="kpi", raw_data="[" + ",".join(p.as_json() for p in points) + "]")
    finally:
        hub.unsubscribe(sub)
