"""The telemetry ingest API: KPI samples measured outside the portal (active probes, a meter).

``POST /kpis/ingest`` takes a batch of points with an API key (or login) of scope
``telemetry``. All or nothing: every point is validated (fields by pydantic, then the slices
and backends must exist and, for a key bound to a tenant, be that tenant's slices) before
any is stored; one refused point refuses the batch with each bad point's field named. The
points then go the way the collector's go (``kpi.store.ingest``: stored, judged against the
SLAs, published live) under their own ``source``, so a probe's series never overwrites the
data plane's counters. Limits: ``MAX_INGEST_POINTS`` points and ``MAX_BODY_BYTES`` per
request (a declared larger body is refused before it is read), ``RATE_LIMIT`` requests per
principal and process (``app.state.telemetry_rate_limit`` overrides it).
"""

from __future__ import annotations

import math
import time
from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.api.deps import CurrentUser, SessionDep, require
from sliceportal.api.errors import ApiError, FieldError
from sliceportal.api.routing import session_router
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, Scope, Slice
from sliceportal.schemas.kpis import MAX_INGEST_POINTS, IngestBatch, IngestResult

router = session_router(tags=["kpis"])
MAX_BODY_BYTES = 1 << 20  # the API's default body limit (Settings.max_body_bytes) applies before this
FUTURE_SLACK = timedelta(minutes=1)  # clocks differ; a point from further ahead is a mistake
RATE_LIMIT = "300/minute"  # a probe agent posting every second, with room for a catch-up

Telemetry = Annotated[CurrentUser, require(Scope.TELEMETRY)]


class _Limiter:
    """Per process, per principal, like ``api.ratelimit``'s expensive routes (its own budget:
    a probe agent posts every second)."""

    def __init__(self) -> None:
        self.limiter = MovingWindowRateLimiter(MemoryStorage())
        self.items: dict[str, RateLimitItem] = {}

    def hit(self, spec: str, who: str) -> int | None:
        item = self.items.setdefault(spec, parse(spec))
        if self.limiter.hit(item, who, "telemetry"):
            return None
        return max(1, math.ceil(self.limiter.get_window_stats(item, who, "telemetry").reset_time - time.time()))


LIMITER = _Limiter()


async def body_within_limit(request: Request) -> None:
    """413 for a body larger than ``MAX_BODY_BYTES`` (declared, or sent chunked)."""
    declared = request.headers.get("content-length")
    if declared is not None and declared.isdigit() and int(declared) > MAX_BODY_BYTES:
        raise ApiError(413, "Request too large", f"at most {MAX_BODY_BYTES} bytes per request")
    if len(await request.body()) > MAX_BODY_BYTES:
        raise ApiError(413, "Request too large", f"at most {MAX_BODY_BYTES} bytes per request")


@router.post(
    "/kpis/ingest",
    response_model=IngestResult,
    status_code=201,
    dependencies=[Depends(body_within_limit)],
    responses={
        413: {"description": f"more than {MAX_BODY_BYTES} bytes"},
        429: {"description": "too many requests; see Retry-After"},
    },
)
async def ingest_points(
    batch: IngestBatch, principal: Telemetry, session: SessionDep, request: Request
) -> IngestResult:
    """Store KPI points measured outside the portal (at most 2 000 a request, scope ``telemetry``):
    all of them, or none, with each bad point's field named."""
    spec = getattr(request.app.state, "telemetry_rate_limit", RATE_LIMIT)
    wait = LIMITER.hit(spec, f"user:{principal.user_id}")
    if wait is not None:
        raise ApiError(
            429,
            "Too many requests",
            f"at most {spec} ingest requests per user; try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )
    return await run_in_threadpool(_store, batch, principal.tenant_scope, session)


def _store(batch: IngestBatch, tenant_scope: int | None, session: Session) -> IngestResult:
    points = batch.points
    assert len(points) <= MAX_INGEST_POINTS  # the model's own limit
    tenant_of = dict(
        session.execute(select(Slice.id, Slice.tenant_id).where(Slice.id.in_({p.slice_id for p in points}))).all()
    )
    backends = set(session.scalars(select(Backend.id).where(Backend.id.in_({p.backend_id for p in points}))))
    latest = datetime.now(UTC) + FUTURE_SLACK
    errors: list[FieldError] = []
    first_of: dict[tuple[int, int, int, str, datetime], int] = {}
    for i, p in enumerate(points):
        key = (p.slice_id, p.backend_id, p.lane, p.source, p.ts)
        if first_of.setdefault(key, i) != i:
            errors.append(FieldError(field=f"points.{i}.ts", message=f"the same interval as points.{first_of[key]}"))
        if p.slice_id not in tenant_of or (tenant_scope is not None and tenant_of[p.slice_id] != tenant_scope):
            # another tenant's slice does not exist for a bound key (as everywhere in the API)
            errors.append(FieldError(field=f"points.{i}.slice_id", message=f"slice {p.slice_id} does not exist"))
        if p.backend_id not in backends:
            errors.append(FieldError(field=f"points.{i}.backend_id", message=f"backend {p.backend_id} does not exist"))
        if p.ts > latest:
            errors.append(FieldError(field=f"points.{i}.ts", message="lies in the future"))
        if len(errors) >= 50:
            break  # enough to fix the client; the batch is refused anyway
    if errors:
        raise ApiError(422, "Validation failed", f"{len(errors)} point(s) refused; nothing was stored", errors=errors)
    changed = ingest(session, points)  # IngestPoints are KpiPoints
    return IngestResult(stored=len(points), violations_changed=len(changed))
