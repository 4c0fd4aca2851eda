"""Subscribers (5G UEs): identity, innermost address, GTP-U tunnels, slice membership."""

from __future__ import annotations

from ipaddress import IPv4Address

from sqlalchemy import BigInteger, CheckConstraint, Column, ForeignKey, Index, String, Table, UniqueConstraint
from sqlalchemy.dialects.postgresql import ARRAY, INET
from sqlalchemy.orm import Mapped, mapped_column, relationship

from sliceportal.models.base import AuditedMixin, Base, IdMixin, TimestampMixin
from sliceportal.models.slicing import Slice

subscriber_slice = Table(
    "subscriber_slice",
    Base.metadata,
    Column("subscriber_id", BigInteger, ForeignKey("subscriber.id", ondelete="CASCADE"), primary_key=True),
    Column("slice_id", BigInteger, ForeignKey("slice.id", ondelete="CASCADE"), primary_key=True),
    Index("ix_subscriber_slice_slice_id", "slice_id"),
)


class Subscriber(IdMixin, TimestampMixin, AuditedMixin, Base):
    __tablename__ = "subscriber"
    __table_args__ = (
        UniqueConstraint("tenant_id", "imsi"),
        UniqueConstraint("tenant_id", "ue_ip"),
        Index("ix_subscriber_teids", "teids", postgresql_using="gin"),
        # the paged table sorts by these (ORDER BY col, id LIMIT / OFFSET)
        Index("ix_subscriber_imsi_id", "imsi", "id"),
        Index("ix_subscriber_ue_ip_id", "ue_ip", "id"),
        CheckConstraint("guaranteed_bps IS NULL OR guaranteed_bps > 0", name="guaranteed_bps_positive"),
    )
    tenant_column = "tenant_id"

    tenant_id: Mapped[int] = mapped_column(ForeignKey("tenant.id", ondelete="RESTRICT"), index=True)
    imsi: Mapped[str] = mapped_column(String(15))
    ue_ip: Mapped[IPv4Address] = mapped_column(INET)
    # GTP-U TEIDs are unique per tenant; checked under the tenant's advisory lock (arrays
    # cannot carry a unique constraint per element).
    teids: Mapped[list[int]] = mapped_column(ARRAY(BigInteger), default=list)
    # This UE's own guaranteed rate; admission control sums them per slice on every link the
    # slice uses (services/admission.py). None: it shares its slice's guarantee.
    guaranteed_bps: Mapped[int | None] = mapped_column(BigInteger)

    slices: Mapped[list[Slice]] = relationship(secondary=subscriber_slice, lazy="selectin")
