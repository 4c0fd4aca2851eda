"""KPIs: time ranges per slice / lane, current values, SLA violations, and the live stream."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from datetime import UTC, datetime, timedelta
from typing import Annotated, Literal

from fastapi import APIRouter, Query, Request
from fastapi.responses import StreamingResponse
from sqlalchemy import func, select

from sliceportal.api.crud import get_scoped, page, scoped
from sliceportal.api.deps import Reader, SessionDep, StreamReader
from sliceportal.api.errors import ApiError
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import KpiPoint, combine_lanes
from sliceportal.models import KpiSample, SlaViolation, Slice
from sliceportal.schemas.common import ListQuery, Page, PathId, QueryId
from sliceportal.schemas.kpis import KpiSamplePublic, SlaViolationPublic

router = APIRouter(tags=["kpis"])
MAX_POINTS = 20_000


@router.get("/slices/{slice_id}/kpis", response_model=list[KpiSamplePublic])
def slice_kpis(slice_id: PathId, principal: Reader, session: SessionDep,
               since: Annotated[datetime | None, Query(description="default: the last 5 minutes")] = None,
               until: datetime | None = None,
               lane: Annotated[int | None, Query(ge=0, le=7)] = None,
               backend_id: QueryId = None,
               group_by: Annotated[Literal["lane", "backend"], Query(
                   description="lane: one sample per (backend, lane, interval); "
                               "backend: one per (backend, interval), the slice's lanes combined")] = "lane",
               ) -> list[KpiSamplePublic]:
    get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    until = until or datetime.now(UTC)
    since = since or until - timedelta(minutes=5)
    if since > until:
        raise ApiError(422, "Validation failed", "since is after until", field="since")
    stmt = select(KpiSample).where(KpiSample.slice_id == slice_id, KpiSample.ts > since, KpiSample.ts <= until)
    if lane is not None:
        stmt = stmt.where(KpiSample.lane == lane)
    if backend_id is not None:
        stmt = stmt.where(KpiSample.backend_id == backend_id)
    rows = session.scalars(stmt.order_by(KpiSample.ts, KpiSample.backend_id, KpiSample.lane).limit(MAX_POINTS))
    samples = [KpiSamplePublic.model_validate(r) for r in rows]
    if group_by == "lane":
        return samples
    groups: dict[tuple[int, datetime], list[KpiPoint]] = {}
    for x in samples:
        groups.setdefault((x.backend_id, x.ts), []).append(KpiPoint.model_validate(x.model_dump()))
    return [KpiSamplePublic.model_validate(combine_lanes(g).model_dump() | {"lane": None}) for g in groups.values()]


@router.get("/slices/{slice_id}/kpis/current", response_model=list[KpiSamplePublic])
def current_kpis(slice_id: PathId, principal: Reader, session: SessionDep,
                 backend_id: QueryId = None) -> list[KpiSample]:
    """The newest sample of each (backend, lane)."""
    get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    newest = (select(KpiSample.backend_id, KpiSample.lane, func.max(KpiSample.ts).label("ts"))
              .where(KpiSample.slice_id == slice_id).group_by(KpiSample.backend_id, KpiSample.lane))
    if backend_id is not None:
        newest = newest.where(KpiSample.backend_id == backend_id)
    sub = newest.subquery()
    return list(session.scalars(
        select(KpiSample).join(sub, (KpiSample.backend_id == sub.c.backend_id) & (KpiSample.lane == sub.c.lane)
                               & (KpiSample.ts == sub.c.ts))
        .where(KpiSample.slice_id == slice_id).order_by(KpiSample.backend_id, KpiSample.lane)))


@router.get("/violations", response_model=Page[SlaViolationPublic])
def violations(principal: Reader, session: SessionDep, params: ListQuery, slice_id: QueryId = None,
               backend_id: QueryId = None, open_only: bool = False) -> Page[SlaViolationPublic]:
    stmt = select(SlaViolation).join(Slice, Slice.id == SlaViolation.slice_id)
    stmt = scoped(stmt, Slice, principal.tenant_scope)
    if slice_id is not None:
        stmt = stmt.where(SlaViolation.slice_id == slice_id)
    if backend_id is not None:
        stmt = stmt.where(SlaViolation.backend_id == backend_id)
    if open_only:
        stmt = stmt.where(SlaViolation.ended_at.is_(None))
    params = params.model_copy(update={"sort": params.sort or "-started_at"})
    rows, count = page(session, stmt, params, {"id": SlaViolation.id, "started_at": SlaViolation.started_at,
                                               "metric": SlaViolation.metric})
    return Page(data=[SlaViolationPublic.model_validate(v) for v in rows], count=count)


@router.get("/kpis/stream", response_class=StreamingResponse,
            responses={200: {"content": {"text/event-stream": {}}, "description": "server-sent events"}})
async def stream(request: Request, principal: StreamReader,
                 slice_id: Annotated[list[int] | None, Query(description="only these slices")] = None
                 ) -> StreamingResponse:
    """Live KPI points as server-sent events (``event: kpi``), each a JSON list of points.

    A tenant receives its own slices' points only: the filter is applied on the server.
    """
    hub: KpiHub = request.app.state.kpi_hub
    sub = hub.subscribe(principal.tenant_scope, frozenset(slice_id) if slice_id else None)

    async def events() -> AsyncIterator[str]:
        try:
            yield "retry: 2000\n\n"
            while True:
                try:
                    points = await asyncio.wait_for(sub.queue.get(), timeout=15)
                except TimeoutError:
                    yield ": keep-alive\n\n"  # lets proxies and the browser see the stream is alive
                    continue
                payload = json.dumps([p.model_dump(mode="json") for p in points])
                yield f"event: kpi\ndata: {payload}\n\n"
        finally:
            hub.unsubscribe(sub)

    return StreamingResponse(events(), media_type="text/event-stream",
                             headers={"Cache-Control": "no-cache", "X-Accel-Buffering": "no"})
