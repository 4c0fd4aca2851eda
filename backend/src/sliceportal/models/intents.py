"""Per-flow intents (seed 001 §5): which UEs' flows of one slice get which action.

An intent stores what was asked -- the message as posted (Listing 1 or the native form),
the UEs it names (IMSI, UE address / prefix, TEID), the services (ports, DSCP, protocol)
and the action -- never the entries it produced: those are derived from the rule set in
force on each backend (``services.intents``), so they cannot drift from the data plane.
The UEs are resolved against the slice's members at every compile, so an intent follows
a subscriber whose address changes.
"""

from __future__ import annotations

from typing import Any, ClassVar

from sqlalchemy import ARRAY, BigInteger, CheckConstraint, Float, ForeignKey, Integer, String, UniqueConstraint
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import AuditedMixin, Base, IdMixin, TimestampMixin


class Intent(IdMixin, TimestampMixin, AuditedMixin, Base):
    __tablename__ = "intent"
    __table_args__ = (
        # a retried POST (same owner, same Idempotency-Key) finds the first one
        UniqueConstraint("owner_id", "idempotency_key"),
        CheckConstraint("action IN ('prioritise', 'steer', 'rate_limit', 'drop')", name="action_known"),
    )
    tenant_column = "tenant_id"
    # the first response is replayed to a retry, not part of the intent's meaning
    audit_exclude: ClassVar[frozenset[str]] = frozenset({"first_response"})

    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id", ondelete="CASCADE"), index=True)
    slice_id: Mapped[int] = mapped_column(ForeignKey("slice.id", ondelete="CASCADE"), index=True)
    owner_id: Mapped[int | None] = mapped_column(ForeignKey("user_account.id", ondelete="SET NULL"))
    owner: Mapped[str] = mapped_column(String(120))
    source_format: Mapped[str] = mapped_column(String(10))  # listing1 | native
    source: Mapped[dict[str, Any]] = mapped_column(JSONB)  # the message as posted
    # the match: UEs (all given selectors must hold) and services ([] = any)
    imsis: Mapped[list[str]] = mapped_column(ARRAY(String(15)), default=list)
    ue_prefixes: Mapped[list[str]] = mapped_column(ARRAY(String(18)), default=list)  # "a.b.c.d/len"
    teids: Mapped[list[int]] = mapped_column(ARRAY(BigInteger), default=list)
    dst_ports: Mapped[list[list[int]]] = mapped_column(JSONB, default=list)  # [[lo, hi], ...]
    dscp: Mapped[list[int]] = mapped_column(ARRAY(Integer), default=list)
    protocol: Mapped[str] = mapped_column(String(8), default="any")
    # the action
    action: Mapped[str] = mapped_column(String(12))
    lane: Mapped[int | None] = mapped_column(Integer)  # catalogue lane 0-7
    rr_path: Mapped[int | None] = mapped_column(Integer)
    rate_mbps: Mapped[float | None] = mapped_column(Float)
    idempotency_key: Mapped[str | None] = mapped_column(String(255))
    request_hash: Mapped[str | None] = mapped_column(String(64))  # sha256 of the canonical body
    first_response: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
