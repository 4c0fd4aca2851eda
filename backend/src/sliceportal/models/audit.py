"""The audit trail: every change to an audited row is logged with before/after snapshots.

Change logging lives here, in the model layer, not in the views: a ``after_flush``
listener records every insert, update and delete of an ``AuditedMixin`` row, so no API
route can forget it. The actor is carried by the session (``set_actor``), which the API
does once per request when it authenticates the caller.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index, String, Table, event, func, insert, inspect
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, Session, mapped_column

from sliceportal.models.base import AuditedMixin, Base, IdMixin, jsonable


@dataclass(frozen=True)
class Actor:
    user_id: int | None
    name: str
    via: str = "session"  # "token", "api_key:<prefix>", "system"


SYSTEM = Actor(None, "system", "system")


def set_actor(session: Session, actor: Actor) -> None:
    session.info["actor"] = actor


def actor_of(session: Session) -> Actor:
    actor: Actor = session.info.get("actor", SYSTEM)
    return actor


class AuditLog(IdMixin, Base):
    __tablename__ = "audit_log"
    __table_args__ = (Index("ix_audit_log_object", "object_type", "object_id"),)

    ts: Mapped[datetime] = mapped_column(server_default=func.now(), index=True)
    actor_id: Mapped[int | None] = mapped_column(BigInteger)
    actor: Mapped[str] = mapped_column(String(120))
    via: Mapped[str] = mapped_column(String(60))
    action: Mapped[str] = mapped_column(String(20))  # create / update / delete / deploy / import ...
    object_type: Mapped[str] = mapped_column(String(60))
    object_id: Mapped[int | None] = mapped_column(BigInteger)
    tenant_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    before: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    after: Mapped[dict[str, Any] | None] = mapped_column(JSONB)


def _tenant_of(obj: Any) -> int | None:
    col = getattr(obj, "tenant_column", None)
    return getattr(obj, col, None) if col else None


# Built once, run with each row as parameters: a statement built per call costs its
# construction and cache key on every audited change (a fan-out writes one per backend).
_TABLE: Table = AuditLog.__table__  # type: ignore[assignment]
_INSERT = insert(_TABLE)


def record(
    session: Session,
    action: str,
    object_type: str,
    object_id: int | None,
    before: dict[str, Any] | None = None,
    after: dict[str, Any] | None = None,
    tenant_id: int | None = None,
) -> None:
    """Log an action that is not a plain row change (deploy, import, login ...)."""
    actor = actor_of(session)
    session.execute(
        _INSERT,
        {
            "actor_id": actor.user_id,
            "actor": actor.name,
            "via": actor.via,
            "action": action,
            "object_type": object_type,
            "object_id": object_id,
            "tenant_id": tenant_id,
            "before": before,
            "after": after,
        },
    )


@event.listens_for(Session, "before_flush")
def _capture_before(session: Session, _ctx: Any, _instances: Any) -> None:
    # Snapshot dirty rows as they were loaded, before the flush overwrites them.
    pending: dict[int, dict[str, Any]] = session.info.setdefault("audit_before", {})
    for obj in session.dirty:
        if isinstance(obj, AuditedMixin) and session.is_modified(obj, include_collections=False):
            state = inspect(obj)
            before = obj.snapshot()
            for attr in state.attrs:
                hist = attr.history
                if hist.has_changes() and attr.key in before:
                    before[attr.key] = jsonable(hist.deleted[0] if hist.deleted else None)
            pending[id(obj)] = before
    for obj in session.deleted:
        if isinstance(obj, AuditedMixin):
            pending[id(obj)] = obj.snapshot()


@event.listens_for(Session, "after_flush")
def _write_audit(session: Session, _ctx: Any) -> None:
    pending: dict[int, dict[str, Any]] = session.info.pop("audit_before", {})
    actor = actor_of(session)
    rows: list[dict[str, Any]] = []

    def add(action: str, obj: AuditedMixin, before: dict[str, Any] | None, after: dict[str, Any] | None) -> None:
        rows.append(
            {
                "actor_id": actor.user_id,
                "actor": actor.name,
                "via": actor.via,
                "action": action,
                "object_type": type(obj).__tablename__,  # type: ignore[attr-defined]
                "object_id": getattr(obj, "id", None),
                "tenant_id": _tenant_of(obj),
                "before": None if before is None else obj.redacted(before),
                "after": None if after is None else obj.redacted(after),
            }
        )

    for obj in session.new:
        if isinstance(obj, AuditedMixin):
            add("create", obj, None, obj.snapshot())
    for obj in session.dirty:
        if isinstance(obj, AuditedMixin) and id(obj) in pending:
            add("update", obj, pending[id(obj)], obj.snapshot())
    for obj in session.deleted:
        if isinstance(obj, AuditedMixin):
            add("delete", obj, pending.get(id(obj)), None)
    if rows:
        session.connection().execute(_INSERT, rows)
