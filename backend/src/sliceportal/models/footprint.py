"""Stored derived state of slice status (issue #28): what each slice should look like on a
backend, what the rule set in force holds for it, and the generation that says when the first
is stale. ``services/footprint_state.py`` fills and reads them; the database is the cache, so
every API worker and the controller see the same answers.

- ``slice_footprint_gen``: one number per slice, drawn from a sequence by triggers (migration
  0015) in the same transaction as any change to what the slice compiles from: the slice, its
  services, intents, subscriber memberships, its subscribers, tenant and slice type. A value
  is never reused (sequences do not roll back), so a cache keyed by it cannot match a
  configuration it was not computed from.
- ``backend_footprint``: per backend, each assigned slice's wanted digest, computed for the
  rule set in force (its target) and the generations of the backend's slices (``input_key``).
- ``rule_set_footprint``: per rule set (immutable), each slice's digest as the rule set holds
  it, every slice ref it carries, and the target it was compiled for.

No foreign keys on the two caches: they are written on a connection of their own while a
caller's transaction may hold locks on the rows they would reference; ids are never reused,
so a row left behind by a deleted backend or rule set is never read.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, ForeignKey, String, Text, func
from sqlalchemy.dialects.postgresql import ARRAY, JSONB
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import Base


class SliceFootprintGen(Base):
    __tablename__ = "slice_footprint_gen"

    slice_id: Mapped[int] = mapped_column(BigInteger, ForeignKey("slice.id", ondelete="CASCADE"), primary_key=True)
    gen: Mapped[int] = mapped_column(BigInteger)


class BackendFootprint(Base):
    __tablename__ = "backend_footprint"

    backend_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    rule_set_id: Mapped[int] = mapped_column(BigInteger)  # the rule set in force whose target was compiled for
    input_key: Mapped[str] = mapped_column(String(32))  # md5 of (slice id, generation) of the backend's slices
    wanted: Mapped[dict[str, str]] = mapped_column(JSONB)  # slice id -> digest of its footprint compiled now
    error: Mapped[str] = mapped_column(Text, default="")  # why the configuration does not compile, or ""
    computed_at: Mapped[datetime] = mapped_column(server_default=func.now())


class RuleSetFootprint(Base):
    __tablename__ = "rule_set_footprint"

    rule_set_id: Mapped[int] = mapped_column(BigInteger, primary_key=True)
    digests: Mapped[dict[str, str]] = mapped_column(JSONB)  # slice id -> digest of its footprint held
    refs: Mapped[list[int]] = mapped_column(ARRAY(BigInteger))  # every slice ref the rule set carries
    target: Mapped[dict[str, Any]] = mapped_column(JSONB)  # lanes, paths, match fields used, miss policy
