"""The audit trail, read-only: who changed what, when, before and after."""

from __future__ import annotations

from sqlalchemy import select

from sliceportal.api.crud import page
from sliceportal.api.deps import NotTenant, SessionDep
from sliceportal.api.routing import session_router
from sliceportal.models import AuditLog
from sliceportal.schemas.auth import AuditEntryPublic
from sliceportal.schemas.common import ListQuery, Page, QueryId

router = session_router(prefix="/audit", tags=["audit"])
SORTABLE = {"id": AuditLog.id, "ts": AuditLog.ts, "actor": AuditLog.actor, "object_type": AuditLog.object_type}


@router.get("", response_model=Page[AuditEntryPublic])
def list_audit(
    _: NotTenant,
    session: SessionDep,
    params: ListQuery,
    object_type: str | None = None,
    object_id: QueryId = None,
    actor: str | None = None,
) -> Page[AuditEntryPublic]:
    stmt = select(AuditLog)
    if object_type is not None:
        stmt = stmt.where(AuditLog.object_type == object_type)
    if object_id is not None:
        stmt = stmt.where(AuditLog.object_id == object_id)
    if actor is not None:
        stmt = stmt.where(AuditLog.actor == actor)
    params = params.model_copy(update={"sort": params.sort or "-id"})
    rows, count = page(session, stmt, params, SORTABLE, [AuditLog.actor, AuditLog.object_type, AuditLog.action])
    return Page(data=[AuditEntryPublic.model_validate(r) for r in rows], count=count)
