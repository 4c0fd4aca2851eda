"""Tenants (mobile operators / MVNOs) and their isolation identifiers."""

from __future__ import annotations

from ipaddress import IPv4Network

from sqlalchemy import CheckConstraint, Integer, String, Text
from sqlalchemy.dialects.postgresql import CIDR
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import AuditedMixin, Base, IdMixin, TimestampMixin


class Tenant(IdMixin, TimestampMixin, AuditedMixin, Base):
    __tablename__ = "tenant"
    __table_args__ = (
        CheckConstraint("vni BETWEEN 1 AND 16777215", name="vni_range"),
        CheckConstraint("vlan BETWEEN 1 AND 4094", name="vlan_range"),
    )
    tenant_column = "id"

    name: Mapped[str] = mapped_column(String(120), unique=True)
    vni: Mapped[int] = mapped_column(Integer, unique=True)  # VXLAN VNI on the wire (seed 001)
    vlan: Mapped[int | None] = mapped_column(Integer, unique=True)  # P4 table slicing (seed 002)
    ue_pool: Mapped[IPv4Network | None] = mapped_column(CIDR)  # subscribers' addresses lie inside
    contact: Mapped[str] = mapped_column(String(200), default="")
    description: Mapped[str] = mapped_column(Text, default="")
