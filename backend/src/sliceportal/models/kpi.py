"""KPI samples per slice, backend, lane and interval, and SLA violations with their evidence."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Column, Float, ForeignKey, Index, Integer, String, Table, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from sliceportal.models.base import Base, IdMixin
from sliceportal.models.slicing import Backend


class KpiSample(Base):
    __tablename__ = "kpi_sample"
    __table_args__ = (Index("ix_kpi_sample_slice_backend_ts", "slice_id", "backend_id", "ts"),)

    # No foreign keys (migration 0021): PostgreSQL checked them once per row, most of a large
    # ingest's time. kpi.store checks a batch's distinct ids once under the same FOR KEY SHARE
    # lock, and a trigger on slice and backend deletes their samples (the old ON DELETE CASCADE).
    slice_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    # the data plane whose egress was measured: one sample per (slice, backend, lane, interval)
    backend_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    lane: Mapped[int] = mapped_column(Integer, primary_key=True)
    # who measured it (docs/kpis.md "Sources"): 'counters' (the data plane's own counters, read
    # by the KPI collector), 'probe' (active STAMP probes, posted to the ingest API), 'testbed'
    # (the emulator's traffic meter). Each source keeps its own series; kpi/sla.py picks one per check.
    source: Mapped[str] = mapped_column(String(16), primary_key=True)
    ts: Mapped[datetime] = mapped_column(primary_key=True)  # end of the interval
    interval_s: Mapped[float] = mapped_column(Float, default=1.0)
    tx_packets: Mapped[int] = mapped_column(BigInteger, default=0)
    rx_packets: Mapped[int] = mapped_column(BigInteger, default=0)
    tx_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    rx_bytes: Mapped[int] = mapped_column(BigInteger, default=0)
    throughput_bps: Mapped[float] = mapped_column(Float, default=0.0)
    loss_pct: Mapped[float] = mapped_column(Float, default=0.0)
    delay_mean_ms: Mapped[float | None] = mapped_column(Float)
    delay_p50_ms: Mapped[float | None] = mapped_column(Float)
    delay_p99_ms: Mapped[float | None] = mapped_column(Float)
    jitter_ms: Mapped[float | None] = mapped_column(Float)
    drops: Mapped[dict[str, int]] = mapped_column(JSONB, default=dict)
    ecn_marks: Mapped[int] = mapped_column(BigInteger, default=0)


class SlaViolation(IdMixin, Base):
    __tablename__ = "sla_violation"
    __table_args__ = (Index("ix_sla_violation_backend_open", "slice_id", "backend_id", "ended_at"),)

    slice_id: Mapped[int] = mapped_column(ForeignKey("slice.id", ondelete="CASCADE"), index=True)
    backend_id: Mapped[int] = mapped_column(ForeignKey("backend.id", ondelete="CASCADE"))
    lane: Mapped[int | None] = mapped_column(Integer)  # None: the whole slice (guaranteed rate)
    metric: Mapped[str] = mapped_column(String(40))
    threshold: Mapped[float] = mapped_column(Float)
    worst: Mapped[float] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column()
    ended_at: Mapped[datetime | None] = mapped_column()
    detail: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    # the samples that opened / closed it, the rule set in force, the data plane's counters
    evidence: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict, server_default="{}")

    backend: Mapped[Backend] = relationship(lazy="joined")

    @property
    def backend_name(self) -> str:
        return self.backend.name


# What the SLA hold-down keeps between intervals (kpi/sla.py, migration 0021): written and read
# by kpi/sla.py's SQL only; declared here so that the models and the migrations describe one
# schema (tests/models/test_schema.py compares them).
sla_check_state = Table(
    "sla_check_state",
    Base.metadata,
    Column("slice_id", BigInteger, ForeignKey("slice.id", ondelete="CASCADE"), primary_key=True),
    Column("backend_id", BigInteger, ForeignKey("backend.id", ondelete="CASCADE"), primary_key=True),
    Column("metric", String(40), primary_key=True),  # '' for a (slice, backend)'s head row
    Column("lane", Integer, primary_key=True),  # -1: the head row or the slice-wide rate check
    Column("state", JSONB, nullable=False, server_default=text("'{}'")),
)
