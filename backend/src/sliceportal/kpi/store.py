"""Storing KPI points: insert, evaluate SLAs, publish live — one call per interval.

Publishing goes through PostgreSQL (``kpi.notify``): the points are notified in the same
transaction as their insert, so every API process's listener receives them on commit, and a
rolled-back ingest publishes nothing.
"""

from __future__ import annotations

from collections.abc import Sequence

import psycopg
from pydantic import TypeAdapter
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.kpi.notify import notify
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.sla import HoldDown, evaluate
from sliceportal.models import KpiSample, SlaViolation, Slice

KEY = ("slice_id", "backend_id", "lane", "source", "ts")  # one sample per key: no duplicates, no zero twins
COLUMNS = ", ".join(KpiPoint.model_fields)  # the sample's columns (a point has exactly those fields)
# The whole batch is ONE statement with ONE parameter: the points as a JSON array (encoded by
# pydantic's Rust core), turned into rows by PostgreSQL with the table's own row type. Whatever
# the batch's size it is planned once. (A multi-row VALUES built by SQLAlchemy cost ~1.5 ms per
# row to compile, and PostgreSQL's 65 535 binds capped it at 3 000 rows; per-column arrays cost
# Python-side array dumping.) A source that reports an interval twice (a restarted collector)
# overwrites, not duplicates.
_UPSERT = (
    f"INSERT INTO {KpiSample.__tablename__} ({COLUMNS}) "
    f"SELECT {COLUMNS} FROM json_populate_recordset(NULL::{KpiSample.__tablename__}, %s::json) "
    f"ON CONFLICT ({', '.join(KEY)}) DO UPDATE SET "
    + ", ".join(f"{c} = EXCLUDED.{c}" for c in KpiPoint.model_fields if c not in KEY)
)
_BATCH = TypeAdapter(list[KpiPoint])


# kpi_sample has no foreign keys (migration 0021): PostgreSQL checked them once per row, 560 ms
# of a 10 000-row batch. The batch's distinct ids are checked here once, under the very lock
# the foreign key's check took (FOR KEY SHARE: a slice or backend cannot be deleted until the
# ingest commits, and deleting one removes its samples through a trigger).
_REFERENCED = {
    table: f"SELECT id FROM {table} WHERE id = ANY(%s) ORDER BY id FOR KEY SHARE" for table in ("slice", "backend")
}


class UnknownReference(ValueError):
    """Points name a slice or backend that does not exist: nothing is stored."""

    def __init__(self, field: str, ids: set[int]) -> None:
        super().__init__(f"{field}: no such {field.removesuffix('_id')} {sorted(ids)}")
        self.field, self.ids = field, ids


def _insert(session: Session, points: Sequence[KpiPoint]) -> str:
    """Upsert ``points`` in ``session``'s transaction (on its own psycopg connection); the
    points as JSON (what the live streams are notified)."""
    session.flush()  # what the session holds goes first, as with any statement it executes
    body = _BATCH.dump_json(list(points)).decode()
    raw = session.connection().connection.driver_connection
    assert isinstance(raw, psycopg.Connection)
    with raw.cursor() as cur:
        for field, table in (("slice_id", "slice"), ("backend_id", "backend")):
            wanted = {getattr(p, field) for p in points}
            cur.execute(_REFERENCED[table], (sorted(wanted),))
            missing = wanted - {row[0] for row in cur.fetchall()}
            if missing:
                raise UnknownReference(field, missing)
        cur.execute(_UPSERT, (body,))
    return body


def _store(
    session: Session, points: Sequence[KpiPoint], hold: HoldDown | None
) -> tuple[list[SlaViolation], dict[int, int], str]:
    body = _insert(session, points)
    changed = evaluate(session, points, hold)
    tenant_of = dict(
        session.execute(select(Slice.id, Slice.tenant_id).where(Slice.id.in_({p.slice_id for p in points}))).all()
    )
    return changed, {int(s): int(t) for s, t in tenant_of.items()}, body


def store(
    session: Session, points: Sequence[KpiPoint], hold: HoldDown | None = None
) -> tuple[list[SlaViolation], dict[int, int]]:
    """Insert the points and judge them against the SLAs in ``session``'s transaction (not
    committed); the violations changed and each point's slice -> tenant."""
    changed, tenant_of, _ = _store(session, points, hold)
    return changed, tenant_of


def ingest(session: Session, points: Sequence[KpiPoint], *, hold: HoldDown | None = None) -> list[SlaViolation]:
    """Store one or more intervals' points, judge them against the SLAs (``hold``: the
    hold-down, default from the settings) and publish them to every process's live streams."""
    if not points:
        return []
    changed, tenant_of, body = _store(session, points, hold)
    notify(session, points, tenant_of, body)
    session.commit()
    return changed
