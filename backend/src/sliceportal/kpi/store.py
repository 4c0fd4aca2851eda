"""Storing KPI points: insert, evaluate SLAs, publish live — one call per interval.

Publishing goes through PostgreSQL (``kpi.notify``): the points are notified in the same
transaction as their insert, so every API process's listener receives them on commit, and a
rolled-back ingest publishes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import select
from sqlalchemy.dialects.postgresql import insert
from sqlalchemy.orm import Session

from sliceportal.kpi.notify import notify
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.sla import HoldDown, evaluate
from sliceportal.models import KpiSample, SlaViolation, Slice

KEY = ("slice_id", "backend_id", "lane", "source", "ts")  # one sample per key: no duplicates, no zero twins
ROWS_PER_STATEMENT = 3_000


def store(session: Session, points: Sequence[KpiPoint], hold: HoldDown | None = None
          ) -> tuple[list[SlaViolation], dict[int, int]]:
    """Insert the points and judge them against the SLAs in ``session``'s transaction (not
    committed); the violations changed and each point's slice -> tenant."""
    rows = [p.model_dump() for p in points]
    # PostgreSQL binds at most 65 535 parameters per statement: 18 columns x 3 000 rows fit
    # (an interval of the collector is one statement, and so is a full ingest batch of 2 000)
    for i in range(0, len(rows), ROWS_PER_STATEMENT):
        chunk = rows[i:i + ROWS_PER_STATEMENT]
        # a source that reports an interval twice (a restarted collector) overwrites, not duplicates
        stmt = insert(KpiSample).values(chunk)
        stmt = stmt.on_conflict_do_update(
            index_elements=[getattr(KpiSample, k) for k in KEY],
            set_={c: stmt.excluded[c] for c in chunk[0] if c not in KEY})
        session.execute(stmt)
    changed = evaluate(session, points, hold)
    tenant_of = dict(session.execute(select(Slice.id, Slice.tenant_id).where(
        Slice.id.in_({p.slice_id for p in points}))).all())
    return changed, {int(s): int(t) for s, t in tenant_of.items()}


def ingest(session: Session, points: Sequence[KpiPoint], *, hold: HoldDown | None = None) -> list[SlaViolation]:
    """Store one or more intervals' points, judge them against the SLAs (``hold``: the
    hold-down, default from the settings) and publish them to every process's live streams."""
    if not points:
        return []
    changed, tenant_of = store(session, points, hold)
    notify(session, points, tenant_of)
    session.commit()
    return changed
