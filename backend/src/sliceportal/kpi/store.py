"""Storing KPI points: insert, evaluate SLAs, publish live — one call per interval."""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.sla import HoldDown, evaluate
from sliceportal.models import KpiSample, SlaViolation, Slice

KEY = ("slice_id", "backend_id", "lane", "ts")  # one sample per key: no duplicates, no zero twins


def ingest(session: Session, points: Sequence[KpiPoint], hub: KpiHub | None = None,
           hold: HoldDown | None = None) -> list[SlaViolation]:
    """Store one or more intervals' points, judge them against the SLAs (``hold``: the
    hold-down, default from the settings) and publish them live."""
    if not points:
        return []
    rows = [p.model_dump() for p in points]
    # a source that reports an interval twice (a restarted collector) overwrites, not duplicates
    stmt = insert(KpiSample).values(rows)
    stmt = stmt.on_conflict_do_update(
        index_elements=[KpiSample.slice_id, KpiSample.backend_id, KpiSample.lane, KpiSample.ts],
        set_={c: stmt.excluded[c] for c in rows[0] if c not in KEY})
    session.execute(stmt)
    changed = evaluate(session, points, hold)
    tenant_of = dict(session.execute(select(Slice.id, Slice.tenant_id).where(
        Slice.id.in_({p.slice_id for p in points}))).all())
    session.commit()
    if hub is not None:
        hub.publish(list(points), tenant_of)
    return changed
