"""The slice-type catalogue of seed 000 Table 1 (seeded by a migration, read-only)."""

from __future__ import annotations

from sqlalchemy import ARRAY, Integer, String, Text
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import Base, IdMixin


class SliceType(IdMixin, Base):
    __tablename__ = "slice_type"

    name: Mapped[str] = mapped_column(String(120), unique=True)
    traffic_classes: Mapped[int] = mapped_column(Integer)  # "# Differentiated 5G User Traffic"
    lanes: Mapped[list[int]] = mapped_column(ARRAY(Integer))  # priority queue / lane, 0-7
    use_cases: Mapped[list[str]] = mapped_column(ARRAY(Text))  # as printed in Table 1
    position: Mapped[int] = mapped_column(Integer)  # row order in Table 1
