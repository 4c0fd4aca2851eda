"""Differences between two rule sets of one backend, or between the preview and the one in force.

The diff is the drivers' own (``drivers.push.diff_tables``), the very function a push uses to
decide what to write: the UI shows what a deploy or rollback would change on the data plane,
table by table, not a second interpretation of it. Both sides are native plans, so the tables
are the data plane's (TCAM, BPF maps, P4 tables).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.drivers.push import PlanDiff, diff_tables
from sliceportal.models import Backend, RuleSet
from sliceportal.services.deployments import current_rule_set, preview
from sliceportal.services.errors import NotFoundError


@dataclass(frozen=True)
class DiffSide:
    """One side of a diff: a stored rule set (``number``), the preview (``number`` None), or nothing."""

    label: str
    number: int | None
    digest: str | None
    tables: dict[str, list[dict[str, Any]]]


@dataclass(frozen=True)
class RuleSetDiff:
    backend_id: int
    base: DiffSide  # what the data plane would hold before (the older / active side)
    target: DiffSide  # what it would hold after
    active_number: int | None  # the rule set in force on the backend now
    diff: PlanDiff


def _tables(plan: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
    tables = plan.get("tables", {})
    return {str(name): list(entries) for name, entries in tables.items()}


def _stored(session: Session, backend: Backend, number: int, field: str) -> RuleSet:
    rs = session.scalar(select(RuleSet).where(RuleSet.backend_id == backend.id, RuleSet.number == number))
    if rs is None:
        raise NotFoundError(f"backend {backend.name} has no rule set {number}", field=field)
    return rs


def _side(rs: RuleSet) -> DiffSide:
    return DiffSide(label=f"rule set {rs.number}", number=rs.number, digest=rs.digest, tables=_tables(rs.plan))


def between(session: Session, backend: Backend, number: int, against: int) -> RuleSetDiff:
    """What changes on ``backend`` going from rule set ``against`` to rule set ``number``."""
    target = _side(_stored(session, backend, number, "number"))
    base = _side(_stored(session, backend, against, "against"))
    active = current_rule_set(session, backend.id)
    return RuleSetDiff(
        backend.id, base, target, active.number if active else None, diff_tables(base.tables, target.tables)
    )


def preview_against_active(session: Session, backend: Backend) -> RuleSetDiff:
    """What a deploy now would change: the compiled preview against the rule set in force.

    With nothing deployed yet the base is empty, and every entry of the preview is added.
    """
    p = preview(session, backend)
    target = DiffSide(
        label="preview", number=None, digest=p.plan.version, tables=_tables(p.plan.model_dump(mode="json"))
    )
    active = current_rule_set(session, backend.id)
    base = _side(active) if active else DiffSide(label="nothing deployed", number=None, digest=None, tables={})
    return RuleSetDiff(
        backend.id, base, target, active.number if active else None, diff_tables(base.tables, target.tables)
    )
