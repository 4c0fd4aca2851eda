"""The stored side of slice status (issue #28; tables in ``models/footprint.py``).

Reads are a fixed number of statements for any page of slices and any number of
subscribers; writes of the two caches go through a connection of their own, committed at
once, so a GET that fills them never commits (or is rolled back with) its caller's work.
That is safe even from inside a caller's uncommitted transaction: a cache row is keyed by
footprint generations and rule-set ids, which are drawn from sequences and never reused, so
a row computed from a state that is rolled back can never match a later one.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Executable, String, Table, bindparam, text
from sqlalchemy.dialects.postgresql import ARRAY, insert
from sqlalchemy.orm import Session
from sqlalchemy.types import BigInteger

from sliceportal.models.footprint import BackendFootprint, RuleSetFootprint

IDS = ARRAY(BigInteger)


@dataclass(frozen=True)
class InForce:
    rule_set_id: int
    number: int
    since: datetime | None


@dataclass(frozen=True)
class LastPush:
    deployment_id: int
    status: str
    error: str


@dataclass(frozen=True)
class Wanted:
    rule_set_id: int
    input_key: str
    wanted: dict[str, str]
    error: str


@dataclass(frozen=True)
class Stored:
    """What is stored about one backend, for the slices of one page."""

    in_force: InForce | None  # the rule set in force (as ``models.queries.current_rule_set``)
    last_push: LastPush | None  # the last finished deploy or rollback
    input_key: str  # what the backend's slices compile from, now
    wanted: Wanted | None  # the cached wanted digests (page slices only), whatever their key
    held: dict[str, str]  # page slice -> digest in the rule set in force
    target: dict[str, Any]  # what the rule set in force was compiled for
    indexed: bool  # the rule set in force has its footprint stored
    ever: set[int]  # page slices some rule set a push put in force here carried
    unindexed: list[int]  # rule sets put in force here whose footprint is not stored yet


# One statement for every backend of a page: a page's cost does not grow with its backends,
# slices or subscribers, and a read is one round trip to the database, not seven.
_STORED = text("""
WITH b AS (SELECT DISTINCT unnest(:b) AS id),
forced AS (
  SELECT DISTINCT ON (d.backend_id) d.backend_id, d.rule_set_id, rs.number,
         coalesce(d.finished_at, d.created_at) AS since
  FROM deployment d JOIN rule_set rs ON rs.id = d.rule_set_id
  WHERE d.backend_id = ANY(:b) AND d.status = 'succeeded' AND d.kind IN ('deploy', 'rollback')
    AND d.finished_at IS NOT NULL
  ORDER BY d.backend_id, d.id DESC),
pushed AS (
  SELECT DISTINCT ON (backend_id) backend_id, id, status, error FROM deployment
  WHERE backend_id = ANY(:b) AND kind IN ('deploy', 'rollback') AND status <> 'running'
  ORDER BY backend_id, id DESC),
keys AS (
  SELECT sb.backend_id, md5(string_agg(sb.slice_id::text || ':' || coalesce(g.gen, 0)::text, ','
                                       ORDER BY sb.slice_id)) AS input_key
  FROM slice_backend sb LEFT JOIN slice_footprint_gen g ON g.slice_id = sb.slice_id
  WHERE sb.backend_id = ANY(:b) GROUP BY sb.backend_id),
succeeded AS (SELECT DISTINCT backend_id, rule_set_id FROM deployment
              WHERE backend_id = ANY(:b) AND status = 'succeeded')
SELECT b.id, f.rule_set_id, f.number, f.since, p.id, p.status, p.error, coalesce(k.input_key, ''),
  w.rule_set_id, w.input_key, w.error,
  (SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each_text(w.wanted) e WHERE e.key = ANY(:keys)),
  h.rule_set_id IS NOT NULL,
  (SELECT jsonb_object_agg(e.key, e.value) FROM jsonb_each_text(h.digests) e WHERE e.key = ANY(:keys)),
  h.target,
  ARRAY(SELECT DISTINCT u.ref FROM succeeded s JOIN rule_set_footprint rf ON rf.rule_set_id = s.rule_set_id
        CROSS JOIN unnest(rf.refs) AS u(ref) WHERE s.backend_id = b.id AND u.ref = ANY(:s)),
  ARRAY(SELECT s.rule_set_id FROM succeeded s WHERE s.backend_id = b.id
        AND NOT EXISTS (SELECT 1 FROM rule_set_footprint rf WHERE rf.rule_set_id = s.rule_set_id))
FROM b LEFT JOIN forced f ON f.backend_id = b.id LEFT JOIN pushed p ON p.backend_id = b.id
  LEFT JOIN keys k ON k.backend_id = b.id LEFT JOIN backend_footprint w ON w.backend_id = b.id
  LEFT JOIN rule_set_footprint h ON h.rule_set_id = f.rule_set_id""").bindparams(
    bindparam("b", type_=IDS), bindparam("s", type_=IDS), bindparam("keys", type_=ARRAY(String))
)


def stored(session: Session, backend_ids: Sequence[int], slice_ids: Sequence[int]) -> dict[int, Stored]:
    """What is stored about each backend, for the slices ``slice_ids`` of a page: one statement."""
    out = {}
    for (
        b,
        rs,
        number,
        since,
        push,
        push_status,
        push_error,
        key,
        w_rs,
        w_key,
        w_error,
        wanted,
        indexed,
        held,
        target,
        ever,
        unindexed,
    ) in session.execute(_STORED, {"b": list(backend_ids), "s": list(slice_ids), "keys": [str(i) for i in slice_ids]}):
        out[b] = Stored(
            in_force=InForce(rs, number, since) if rs is not None else None,
            last_push=LastPush(push, push_status, push_error or "") if push is not None else None,
            input_key=key,
            wanted=Wanted(w_rs, w_key, dict(wanted or {}), w_error) if w_rs is not None else None,
            held=dict(held or {}),
            target=dict(target or {}),
            indexed=bool(indexed),
            ever=set(ever),
            unindexed=list(unindexed),
        )
    return out


# The same key as ``_STORED``'s, for one backend: read before a deploy compiles (see
# services/footprint_refresh.py), so a change committed after it makes the stored row stale.
_KEY = text("""
SELECT coalesce(md5(string_agg(sb.slice_id::text || ':' || coalesce(g.gen, 0)::text, ',' ORDER BY sb.slice_id)), '')
FROM slice_backend sb LEFT JOIN slice_footprint_gen g ON g.slice_id = sb.slice_id WHERE sb.backend_id = :b""")


_KEYS = text("""
SELECT b.id, coalesce(md5(string_agg(sb.slice_id::text || ':' || coalesce(g.gen, 0)::text, ','
                                     ORDER BY sb.slice_id)), '')
FROM unnest(CAST(:b AS bigint[])) AS b(id) LEFT JOIN slice_backend sb ON sb.backend_id = b.id
  LEFT JOIN slice_footprint_gen g ON g.slice_id = sb.slice_id GROUP BY b.id""")


def input_key(session: Session, backend_id: int) -> str:
    """What the backend's slices compile from now, as ``Stored.input_key`` says it."""
    return str(session.scalar(_KEY, {"b": backend_id}) or "")


def input_keys(session: Session, backend_ids: Sequence[int]) -> dict[int, str]:
    """``input_key`` of each backend, in one statement (a fan-out's preflight read one a backend)."""
    return {int(b): str(key) for b, key in session.execute(_KEYS, {"b": list(backend_ids)})}


# A statement and its parameters: one row, or rows. Every statement here is built once and
# run with its rows as parameters: building one (its construction and cache key) cost as much
# as running it, on every push of a fan-out; a multi-row VALUES has no cache key at all.
Statement = tuple[Executable, dict[str, Any] | Sequence[dict[str, Any]]]


def _write(session: Session, *stmts: Statement) -> None:
    """Run ``stmts`` in one transaction of their own (committed at once, whatever the caller's)."""
    bind = session.get_bind()
    if isinstance(bind, Engine):
        with bind.begin() as conn:
            for stmt, rows in stmts:
                conn.execute(stmt, rows)
    else:  # a session on a caller's own connection: its transaction decides
        for stmt, rows in stmts:
            session.execute(stmt, rows)


_NOTIFY = text("SELECT pg_notify(:c, '')")
_RULE_SET_FOOTPRINTS: Table = RuleSetFootprint.__table__  # type: ignore[assignment]
_INSERT_FOOTPRINTS = insert(_RULE_SET_FOOTPRINTS).on_conflict_do_nothing()
_BACKEND_FOOTPRINTS: Table = BackendFootprint.__table__  # type: ignore[assignment]
_insert_wanted = insert(_BACKEND_FOOTPRINTS)
_UPSERT_WANTED = _insert_wanted.on_conflict_do_update(
    index_elements=[_BACKEND_FOOTPRINTS.c.backend_id],
    set_={k: _insert_wanted.excluded[k] for k in ("rule_set_id", "input_key", "wanted", "error")}
    | {"computed_at": text("now()")},
)


def _notify(channel: str) -> Statement:
    return _NOTIFY, {"c": channel}


def _footprints(rows: Sequence[dict[str, Any]]) -> Statement:
    return _INSERT_FOOTPRINTS, list(rows)


def _wanted_row(backend_id: int, w: Wanted) -> dict[str, Any]:
    return {
        "backend_id": backend_id,
        "rule_set_id": w.rule_set_id,
        "input_key": w.input_key,
        "wanted": w.wanted,
        "error": w.error,
    }


def notify(session: Session, channel: str) -> None:
    """NOTIFY ``channel`` (on a connection of its own: sent at once, whatever the caller's transaction)."""
    _write(session, _notify(channel))


def store_rule_set_footprints(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store rule sets' footprints (immutable: a row already there stays)."""
    if rows:
        _write(session, _footprints(rows))


def store_wanted(session: Session, wanted: dict[int, Wanted]) -> None:
    """Store each backend's wanted digests, in one statement (a page or a refresh of a fleet
    computes them for many backends at once)."""
    if wanted:
        _write(session, (_UPSERT_WANTED, [_wanted_row(b, w) for b, w in wanted.items()]))


def store_pushed(session: Session, row: dict[str, Any], backend_id: int, w: Wanted | None, channel: str) -> None:
    """What a completed push stores (``footprint_push.after_push``): its rule set's footprint
    ``row``, the backend's wanted digests ``w`` when known, and a NOTIFY on ``channel``
    (delivered when they are committed), in one transaction."""
    wanted: list[Statement] = [(_UPSERT_WANTED, _wanted_row(backend_id, w))] if w is not None else []
    _write(session, _footprints([row]), *wanted, _notify(channel))
