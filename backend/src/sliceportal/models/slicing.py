"""Slices, their service classes, and the backends they are deployed on."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum
from typing import Any

from sqlalchemy import (
    ARRAY,
    BigInteger,
    CheckConstraint,
    Column,
    Float,
    ForeignKey,
    Integer,
    String,
    Table,
    Text,
    UniqueConstraint,
)
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column, relationship

from sliceportal.core.redaction import redact_options
from sliceportal.models.base import AuditedMixin, Base, IdMixin, TimestampMixin
from sliceportal.models.catalogue import SliceType
from sliceportal.models.tenancy import Tenant


class SliceState(StrEnum):
    DRAFT = "draft"
    COMPILED = "compiled"
    DEPLOYED = "deployed"
    DEGRADED = "degraded"
    FAILED = "failed"


class PathMode(StrEnum):
    PER_SLICE = "per_slice"  # all users of a slice share one RR path (subnet bits)
    PER_USER_GROUP = "per_user_group"  # UE address bits pick the path (seed 000 Algorithm 1)


DEFAULT_LINK_BPS = 10_000_000_000  # 10 Gbit/s: migration 0008's default for existing backends

slice_backend = Table(
    "slice_backend",
    Base.metadata,
    Column("slice_id", BigInteger, ForeignKey("slice.id", ondelete="CASCADE"), primary_key=True),
    Column("backend_id", BigInteger, ForeignKey("backend.id", ondelete="CASCADE"), primary_key=True),
)


# the healths in which a backend is known not to answer (the probes' run of failures, or a
# failed registration): reads of it are skipped, pushes refused
HEALTH_DOWN = ("down", "unreachable")


class Backend(IdMixin, TimestampMixin, AuditedMixin, Base):
    """A data-plane instance reached through a driver plugin."""

    __tablename__ = "backend"
    __table_args__ = (CheckConstraint("link_bps > 0", name="link_bps_positive"),)

    name: Mapped[str] = mapped_column(String(120), unique=True)
    driver: Mapped[str] = mapped_column(String(60))
    options: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    paths: Mapped[int] = mapped_column(Integer, default=8)
    lanes: Mapped[int] = mapped_column(Integer, default=4)
    capacity: Mapped[dict[str, int]] = mapped_column(JSONB, default=dict)
    # Admission control (seed 004 Eq. 1-4) checks the slices on the backend against its egress
    # link; defaults to what the driver declares (Capabilities.link_bps), an operator corrects it.
    link_bps: Mapped[int] = mapped_column(BigInteger, default=DEFAULT_LINK_BPS, server_default=str(DEFAULT_LINK_BPS))
    port_bps: Mapped[dict[str, int]] = mapped_column(JSONB, default=dict, server_default="{}")  # port -> bit/s
    # SLA capabilities (Capabilities.rate_limit / ecn) the operator accepts this backend does not
    # enforce; empty: a slice asking for one is refused at preview / deploy (no silent downgrade)
    accept_unenforced: Mapped[list[str]] = mapped_column(ARRAY(String(20)), default=list, server_default="{}")
    health: Mapped[str] = mapped_column(String(20), default="unknown")  # HEALTH_DOWN: found dead
    health_detail: Mapped[str] = mapped_column(Text, default="")
    # What the last reconcile read back from the data plane (a fact, not an intention):
    # unknown (never checked) / in_sync / out_of_sync (drift, see detail) / unreachable.
    sync_state: Mapped[str] = mapped_column(String(20), default="unknown", server_default="unknown")
    sync_detail: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict, server_default="{}")
    synced_at: Mapped[datetime | None] = mapped_column()

    @classmethod
    def redacted(cls, snapshot: dict[str, Any]) -> dict[str, Any]:
        # driver options may hold an agent's token: never in the audit log
        return {**snapshot, "options": redact_options(snapshot.get("options") or {})}


class Slice(IdMixin, TimestampMixin, AuditedMixin, Base):
    __tablename__ = "slice"
    __table_args__ = (
        UniqueConstraint("tenant_id", "name"),
        CheckConstraint("guaranteed_mbps IS NULL OR guaranteed_mbps > 0", name="guaranteed_positive"),
        CheckConstraint("rate_limit_mbps IS NULL OR rate_limit_mbps > 0", name="rate_positive"),
    )
    tenant_column = "tenant_id"

    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id", ondelete="RESTRICT"), index=True)
    slice_type_id: Mapped[int] = mapped_column(ForeignKey("slice_type.id"))
    name: Mapped[str] = mapped_column(String(120))
    description: Mapped[str] = mapped_column(Text, default="")
    # SLA (seed 004 Table I parameters + the KPIs tenants are promised)
    guaranteed_mbps: Mapped[float | None] = mapped_column(Float)
    rate_limit_mbps: Mapped[float | None] = mapped_column(Float)
    max_delay_ms: Mapped[float | None] = mapped_column(Float)  # burst limit of the virtual queue
    ecn_delay_ms: Mapped[float | None] = mapped_column(Float)  # ECN marking target
    max_loss_pct: Mapped[float | None] = mapped_column(Float)
    max_jitter_ms: Mapped[float | None] = mapped_column(Float)
    path_mode: Mapped[PathMode] = mapped_column(String(20), default=PathMode.PER_SLICE)
    # Why an operator admitted this slice although admission control refused it (services/admission.py):
    # its failing verdicts are shown, not enforced, until it is edited without an override again.
    admission_override: Mapped[str | None] = mapped_column(Text)
    state: Mapped[SliceState] = mapped_column(String(20), default=SliceState.DRAFT)

    tenant: Mapped[Tenant] = relationship(lazy="raise")
    slice_type: Mapped[SliceType] = relationship(lazy="joined")
    backends: Mapped[list[Backend]] = relationship(secondary=slice_backend, lazy="selectin")
    services: Mapped[list[ServiceClass]] = relationship(
        back_populates="slice", lazy="selectin", cascade="all, delete-orphan", order_by="ServiceClass.id"
    )


class ServiceClass(IdMixin, TimestampMixin, AuditedMixin, Base):
    """Which traffic of a slice goes to which of its slice type's lanes (seed 000 Table 2)."""

    __tablename__ = "service_class"
    __table_args__ = (UniqueConstraint("slice_id", "name"),)

    slice_id: Mapped[int] = mapped_column(ForeignKey("slice.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    lane: Mapped[int] = mapped_column(Integer)  # catalogue lane 0-7, one of the slice type's
    dst_ports: Mapped[list[list[int]]] = mapped_column(JSONB, default=list)  # [[lo, hi], ...]; [] = any
    dscp: Mapped[list[int]] = mapped_column(ARRAY(Integer), default=list)  # [] = any
    protocol: Mapped[str] = mapped_column(String(8), default="any")

    slice: Mapped[Slice] = relationship(back_populates="services", lazy="raise")
