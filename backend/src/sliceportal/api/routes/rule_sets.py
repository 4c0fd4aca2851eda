"""Rule-set diffs of one backend: between two stored rule sets, and the preview against the one in force."""

from __future__ import annotations

from typing import Annotated

from fastapi import Query

from sliceportal.api.crud import get_scoped
from sliceportal.api.deps import NotTenant, SessionDep
from sliceportal.api.routing import session_router
from sliceportal.models import Backend
from sliceportal.schemas.common import MAX_ID, PathId
from sliceportal.schemas.rule_sets import (
    ChangedEntry,
    DiffLimit,
    DiffSidePublic,
    RuleSetDiffPublic,
    TableDiffPublic,
)
from sliceportal.services import rule_set_diff as svc

router = session_router(prefix="/backends/{backend_id}", tags=["deployments"])


def _public(d: svc.RuleSetDiff, limit: int) -> RuleSetDiffPublic:
    def side(s: svc.DiffSide) -> DiffSidePublic:
        return DiffSidePublic(
            label=s.label, number=s.number, digest=s.digest, active=s.number is not None and s.number == d.active_number
        )

    tables: dict[str, TableDiffPublic] = {}
    for name, t in d.diff.tables.items():
        tables[name] = TableDiffPublic(
            added=len(t.added),
            removed=len(t.removed),
            changed=len(t.modified),
            added_entries=list(t.added[:limit]),
            removed_entries=list(t.removed[:limit]),
            changed_entries=[ChangedEntry(before=dict(a), after=dict(b)) for a, b in t.modified[:limit]],
            truncated=max(len(t.added), len(t.removed), len(t.modified)) > limit,
        )
    counts = d.diff.counts()
    return RuleSetDiffPublic(
        backend_id=d.backend_id,
        base=side(d.base),
        target=side(d.target),
        active_number=d.active_number,
        identical=d.diff.empty,
        added=counts["added"],
        removed=counts["removed"],
        changed=counts["modified"],
        tables=tables,
    )


@router.get("/rule-sets/{number}/diff", response_model=RuleSetDiffPublic)
def rule_set_diff(
    backend_id: PathId,
    number: PathId,
    _: NotTenant,
    session: SessionDep,
    against: Annotated[
        int,
        Query(
            ge=1,
            le=MAX_ID,
            description="the rule-set number to compare with (the base: the changes lead from it to `number`)",
        ),
    ],
    limit: DiffLimit = 200,
) -> RuleSetDiffPublic:
    """Entries added, removed and changed per data-plane table going from rule set `against` to `number`."""
    backend = get_scoped(session, Backend, backend_id, None, "backend")
    return _public(svc.between(session, backend, number, against), limit)


@router.get("/preview/diff", response_model=RuleSetDiffPublic)
def preview_diff(backend_id: PathId, _: NotTenant, session: SessionDep, limit: DiffLimit = 200) -> RuleSetDiffPublic:
    """What a deploy now would change: the compiled preview against the rule set in force."""
    backend = get_scoped(session, Backend, backend_id, None, "backend")
    return _public(svc.preview_against_active(session, backend), limit)
