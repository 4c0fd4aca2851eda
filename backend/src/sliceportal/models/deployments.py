"""Compiled rule sets (immutable, versioned per backend) and the record of every push."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Float, ForeignKey, Integer, String, Text, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from sliceportal.models.base import Base, IdMixin, TimestampMixin


class RuleSet(IdMixin, TimestampMixin, Base):
    __tablename__ = "rule_set"
    __table_args__ = (UniqueConstraint("backend_id", "number"),)

    backend_id: Mapped[int] = mapped_column(ForeignKey("backend.id", ondelete="CASCADE"), index=True)
    number: Mapped[int] = mapped_column(Integer)  # 1, 2, 3 ... per backend
    digest: Mapped[str] = mapped_column(String(32))
    ir: Mapped[dict[str, Any]] = mapped_column(JSONB)
    plan: Mapped[dict[str, Any]] = mapped_column(JSONB)
    explanation: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    created_by: Mapped[str] = mapped_column(String(120), default="")


class DeploymentStatus(StrEnum):
    RUNNING = "running"
    SUCCEEDED = "succeeded"
    FAILED = "failed"


class DeploymentKind(StrEnum):
    DEPLOY = "deploy"
    ROLLBACK = "rollback"
    RECONCILE = "reconcile"


class Deployment(IdMixin, TimestampMixin, Base):
    __tablename__ = "deployment"

    backend_id: Mapped[int] = mapped_column(ForeignKey("backend.id", ondelete="CASCADE"), index=True)
    rule_set_id: Mapped[int] = mapped_column(ForeignKey("rule_set.id"))
    previous_rule_set_id: Mapped[int | None] = mapped_column(ForeignKey("rule_set.id"))
    kind: Mapped[DeploymentKind] = mapped_column(String(20), default=DeploymentKind.DEPLOY)
    status: Mapped[DeploymentStatus] = mapped_column(String(20), default=DeploymentStatus.RUNNING)
    actor: Mapped[str] = mapped_column(String(120), default="")
    diff: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    error: Mapped[str] = mapped_column(Text, default="")
    rolled_back: Mapped[bool | None] = mapped_column(default=None)
    finished_at: Mapped[datetime | None] = mapped_column()
    duration_s: Mapped[float | None] = mapped_column(Float)

    rule_set: Mapped[RuleSet] = relationship(foreign_keys=[rule_set_id], lazy="joined")
    previous_rule_set: Mapped[RuleSet | None] = relationship(foreign_keys=[previous_rule_set_id], lazy="joined")

    @property
    def rule_set_number(self) -> int:
        return self.rule_set.number

    @property
    def previous_rule_set_number(self) -> int | None:
        return self.previous_rule_set.number if self.previous_rule_set else None
