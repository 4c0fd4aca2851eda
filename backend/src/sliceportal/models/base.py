"""Declarative base and the mixins every resource inherits (timestamps, versions, scoping)."""

from __future__ import annotations

from datetime import datetime
from typing import Any, ClassVar

from sqlalchemy import BigInteger, ColumnElement, DateTime, Integer, MetaData, Text, cast, func, literal
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import DeclarativeBase, Mapped, declared_attr, mapped_column

# Stable constraint names: problem+json maps IntegrityErrors back to fields through them.
NAMING = {
    "ix": "ix_%(table_name)s_%(column_0_N_name)s",
    "uq": "uq_%(table_name)s_%(column_0_N_name)s",
    "ck": "ck_%(table_name)s_%(constraint_name)s",
    "fk": "fk_%(table_name)s_%(column_0_name)s_%(referred_table_name)s",
    "pk": "pk_%(table_name)s",
}


class Base(DeclarativeBase):
    metadata = MetaData(naming_convention=NAMING)
    type_annotation_map: ClassVar[dict[Any, Any]] = {int: Integer, datetime: DateTime(timezone=True)}


def json_document(text: str) -> ColumnElement[Any]:
    """A JSON document already in text, as a value for a ``JSONB`` column: stored as it is,
    not parsed into Python objects to be encoded again. The ORM expires the attribute it is
    given to (it is read back from the row if asked for)."""
    return cast(literal(text, Text()), JSONB)


class IdMixin:
    id: Mapped[int] = mapped_column(BigInteger, primary_key=True, autoincrement=True)


class TimestampMixin:
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    updated_at: Mapped[datetime] = mapped_column(server_default=func.now(), onupdate=func.now())


class AuditedMixin:
    """Rows of these models are change-logged (see ``sliceportal.models.audit``).

    ``version`` is SQLAlchemy's version counter: an UPDATE that races another fails, and
    the API exposes it as the ETag for optimistic concurrency.
    """

    audit_exclude: ClassVar[frozenset[str]] = frozenset()
    version: Mapped[int] = mapped_column(Integer, nullable=False, default=1)

    @declared_attr.directive
    def __mapper_args__(cls) -> dict[str, Any]:
        return {"version_id_col": cls.__table__.c.version}  # type: ignore[attr-defined]

    @classmethod
    def redacted(cls, snapshot: dict[str, Any]) -> dict[str, Any]:
        """The snapshot as the audit log may keep it (a model with secrets among its columns hides them)."""
        return snapshot

    def snapshot(self) -> dict[str, Any]:
        """A JSON-able copy of the row's columns, for audit before/after."""
        out: dict[str, Any] = {}
        for col in self.__table__.columns:  # type: ignore[attr-defined]
            if col.key in self.audit_exclude:
                continue
            out[col.key] = jsonable(getattr(self, col.key))
        return out


def jsonable(value: Any) -> Any:
    if isinstance(value, datetime):
        return value.isoformat()
    if isinstance(value, list | tuple):
        return [jsonable(v) for v in value]
    if isinstance(value, dict):
        return {k: jsonable(v) for k, v in value.items()}
    if isinstance(value, str | int | float | bool) or value is None:
        return value
    return str(value)
