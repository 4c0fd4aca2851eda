"""SLA evaluation: a KPI point beyond a slice's SLA opens a violation, one within closes it."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.kpi.points import KpiPoint
from sliceportal.models import SlaViolation, Slice


@dataclass(frozen=True)
class Check:
    metric: str  # the KpiPoint field compared
    sla: str  # the Slice SLA field it is compared with


# Each check: the point's value must not exceed the slice's SLA value.
CHECKS = (
    Check("loss_pct", "max_loss_pct"),
    Check("delay_p99_ms", "max_delay_ms"),
    Check("jitter_ms", "max_jitter_ms"),
)


def evaluate(session: Session, points: Iterable[KpiPoint]) -> list[SlaViolation]:
    """Open / extend / close violations for ``points``; returns those opened or closed."""
    points = list(points)
    slices = {s.id: s for s in session.scalars(select(Slice).where(Slice.id.in_({p.slice_id for p in points})))}
    open_rows = {(v.slice_id, v.backend_id, v.lane, v.metric): v for v in session.scalars(
        select(SlaViolation).where(SlaViolation.slice_id.in_(slices), SlaViolation.ended_at.is_(None)))}
    changed: list[SlaViolation] = []
    for p in sorted(points, key=lambda x: x.ts):
        s = slices.get(p.slice_id)
        if s is None:
            continue
        for check in CHECKS:
            limit = getattr(s, check.sla)
            value = getattr(p, check.metric)
            if limit is None or value is None:
                continue
            key = (p.slice_id, p.backend_id, p.lane, check.metric)
            current = open_rows.get(key)
            if value > limit:
                if current is None:
                    current = SlaViolation(slice_id=p.slice_id, backend_id=p.backend_id, lane=p.lane,
                                           metric=check.metric,
                                           threshold=limit, worst=value, started_at=p.ts,
                                           detail={"first_value": value})
                    session.add(current)
                    open_rows[key] = current
                    changed.append(current)
                else:
                    current.worst = max(current.worst, value)
            elif current is not None:
                current.ended_at = p.ts
                del open_rows[key]
                changed.append(current)
    return changed
