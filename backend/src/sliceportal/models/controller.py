"""What the controller process reports to the API processes through the database: who
leads (its heartbeat), the live testbed's state, and the testbed commands the API records
for it (``control/``; migration 0011)."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Float, Index, Integer, SmallInteger, String, Text, func, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import Base, IdMixin


class ControllerHeartbeat(Base):
    """One row per role: the leader's identity, since when it leads and its last beat (the
    database's clock, so that hosts with different clocks agree on how old it is)."""

    __tablename__ = "controller_heartbeat"

    role: Mapped[str] = mapped_column(String(40), primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    since: Mapped[datetime] = mapped_column()
    beat_at: Mapped[datetime] = mapped_column(server_default=func.now())
    period_s: Mapped[float] = mapped_column(Float)
    # the leader's supervised loops as /health shows them (core.loops.LoopStatus fields)
    loops: Mapped[list[dict[str, Any]]] = mapped_column(JSONB, default=list)


class TestbedReport(Base):
    """The live testbed's state as its controller last wrote it (one row)."""

    __tablename__ = "testbed_report"
    __test__ = False

    id: Mapped[int] = mapped_column(SmallInteger, primary_key=True)
    host: Mapped[str] = mapped_column(String(255))
    pid: Mapped[int] = mapped_column(Integer)
    reported_at: Mapped[datetime] = mapped_column(server_default=func.now())
    state: Mapped[dict[str, Any]] = mapped_column(JSONB)  # schemas.testbed.TestbedState
    base_pps: Mapped[dict[str, float]] = mapped_column(JSONB, default=dict)  # backend id -> packets/s offered


START, END = "start", "end"  # TestbedCommand.kind: start a congestion scenario, or end the running one


class TestbedCommand(Base, IdMixin):
    """A congestion scenario the API accepted; the controller applies it at its next step."""

    __tablename__ = "testbed_command"
    __test__ = False
    # what the controller polls every beat: the commands not applied yet
    __table_args__ = (Index("ix_testbed_command_pending", "id", postgresql_where=text("applied_at IS NULL")),)

    backend_id: Mapped[int] = mapped_column(BigInteger)
    kind: Mapped[str] = mapped_column(String(8), default=START, server_default=START)  # START or END
    factor: Mapped[float] = mapped_column(Float)
    until: Mapped[datetime] = mapped_column()
    actor: Mapped[str] = mapped_column(String(120))
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    applied_at: Mapped[datetime | None] = mapped_column()
    error: Mapped[str] = mapped_column(Text, default="")
