"""Per-slice, per-lane KPI samples and SLA violation events."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Float, ForeignKey, Index, Integer, String
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import Base, IdMixin


class KpiSample(Base):
    __tablename__ = "kpi_sample"
    __table_args__ = (Index("ix_kpi_sample_slice_ts", "slice_id", "ts"),)

    slice_id: Mapped[int] = mapped_column(
        BigInteger, ForeignKey("slice.id", ondelete="CASCADE"), primary_key=True
    )
    lane: Mapped[int] = mapped_column(Integer, primary_key=True)
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

    slice_id: Mapped[int] = mapped_column(ForeignKey("slice.id", ondelete="CASCADE"), index=True)
    lane: Mapped[int | None] = mapped_column(Integer)
    metric: Mapped[str] = mapped_column(String(40))
    threshold: Mapped[float] = mapped_column(Float)
    worst: Mapped[float] = mapped_column(Float)
    started_at: Mapped[datetime] = mapped_column()
    ended_at: Mapped[datetime | None] = mapped_column()
    detail: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
