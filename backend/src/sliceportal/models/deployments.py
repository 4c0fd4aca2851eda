"""Compiled rule sets (immutable, versioned per backend) and the record of every push."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import Float, ForeignKey, Index, Integer, String, Text, UniqueConstraint, text
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
    """The record of a push, and the job record of a deploy or rollback (issue #26): while it
    runs, ``runner`` (host:pid) renews ``heartbeat_at``; a stale heartbeat means the runner died
    and the leading controller finishes the push (``resumed_by``; services/jobs.py)."""

    __tablename__ = "deployment"
    __table_args__ = (Index("ix_deployment_running", "heartbeat_at", postgresql_where=text("status = 'running'")),)

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
    runner: Mapped[str] = mapped_column(String(200), default="", server_default="")
    heartbeat_at: Mapped[datetime | None] = mapped_column()  # None: a row from before jobs (0017)
    progress: Mapped[dict[str, Any] | None] = mapped_column(JSONB)  # the latest progress event
    resumed_by: Mapped[str] = mapped_column(String(200), default="", server_default="")

    rule_set: Mapped[RuleSet] = relationship(foreign_keys=[rule_set_id], lazy="joined")
    previous_rule_set: Mapped[RuleSet | None] = relationship(foreign_keys=[previous_rule_set_id], lazy="joined")

    @property
    def rule_set_number(self) -> int:
        return self.rule_set.number

    @property
    def previous_rule_set_number(self) -> int | None:
        return self.previous_rule_set.number if self.previous_rule_set else None
