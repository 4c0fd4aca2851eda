"""The stored side of slice status (issue #28; tables in ``models/footprint.py``).

Reads are a fixed number of statements for any page of slices and any number of
subscribers; writes of the two caches go through a connection of their own, committed at
once, so a GET that fills them never commits (or is rolled back with) its caller's work.
That is safe even from inside a caller's uncommitted transaction: a cache row is keyed by
footprint generations and rule-set ids, which are drawn from sequences and never reused, so
a row computed from a state that is rolled back can never match a later one.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from sqlalchemy import Engine, Executable, bindparam, select, text
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


_IN_FORCE = text("""
SELECT DISTINCT ON (d.backend_id) d.backend_id, d.rule_set_id, rs.number, coalesce(d.finished_at, d.created_at)
FROM deployment d JOIN rule_set rs ON rs.id = d.rule_set_id
WHERE d.backend_id = ANY(:b) AND d.status = 'succeeded' AND d.kind IN ('deploy', 'rollback')
  AND d.finished_at IS NOT NULL
ORDER BY d.backend_id, d.id DESC""").bindparams(bindparam("b", type_=IDS))

_LAST_PUSH = text("""
SELECT DISTINCT ON (backend_id) backend_id, id, status, error FROM deployment
WHERE backend_id = ANY(:b) AND kind IN ('deploy', 'rollback') AND status <> 'running'
ORDER BY backend_id, id DESC""").bindparams(bindparam("b", type_=IDS))

_UNINDEXED = text("""
SELECT DISTINCT d.rule_set_id FROM deployment d
WHERE d.backend_id = ANY(:b) AND d.status = 'succeeded'
  AND NOT EXISTS (SELECT 1 FROM rule_set_footprint f WHERE f.rule_set_id = d.rule_set_id)""").bindparams(
    bindparam("b", type_=IDS))

_EVER = text("""
SELECT DISTINCT d.backend_id, u.ref FROM deployment d
JOIN rule_set_footprint f ON f.rule_set_id = d.rule_set_id CROSS JOIN unnest(f.refs) AS u(ref)
WHERE d.backend_id = ANY(:b) AND d.status = 'succeeded' AND u.ref = ANY(:s)""").bindparams(
    bindparam("b", type_=IDS), bindparam("s", type_=IDS))

# what every slice of a backend compiles from, as one key: its slices and their generations
_INPUT_KEYS = text("""
SELECT sb.backend_id, md5(string_agg(sb.slice_id::text || ':' || coalesce(g.gen, 0)::text, ','
                                     ORDER BY sb.slice_id))
FROM slice_backend sb LEFT JOIN slice_footprint_gen g ON g.slice_id = sb.slice_id
WHERE sb.backend_id = ANY(:b) GROUP BY sb.backend_id""").bindparams(bindparam("b", type_=IDS))


def in_force(session: Session, backend_ids: Sequence[int]) -> dict[int, InForce]:
    """The rule set in force on each backend (as ``models.queries.current_rule_set``) and
    since when, without loading its IR."""
    return {b: InForce(rs, number, since) for b, rs, number, since in session.execute(_IN_FORCE, {"b": backend_ids})}


def last_pushes(session: Session, backend_ids: Sequence[int]) -> dict[int, LastPush]:
    return {b: LastPush(i, status, error or "")
            for b, i, status, error in session.execute(_LAST_PUSH, {"b": backend_ids})}


def unindexed_rule_sets(session: Session, backend_ids: Sequence[int]) -> list[int]:
    """Rule sets a push put in force on these backends whose footprint is not stored yet
    (rule sets stored before migration 0015, or pushed since and not read yet)."""
    return sorted(session.scalars(_UNINDEXED, {"b": backend_ids}))


def ever(session: Session, backend_ids: Sequence[int], slice_ids: Sequence[int]) -> set[tuple[int, int]]:
    """(backend, slice) pairs of every rule set a push ever put in force there."""
    return {(b, ref) for b, ref in session.execute(_EVER, {"b": backend_ids, "s": slice_ids})}


def rule_set_footprints(session: Session, rule_set_ids: Iterable[int]) -> dict[int, RuleSetFootprint]:
    ids = sorted(set(rule_set_ids))
    if not ids:
        return {}
    return {f.rule_set_id: f for f in session.scalars(select(RuleSetFootprint)
                                                       .where(RuleSetFootprint.rule_set_id.in_(ids)))}


def input_keys(session: Session, backend_ids: Sequence[int]) -> dict[int, str]:
    return {b: key for b, key in session.execute(_INPUT_KEYS, {"b": backend_ids})}


def wanted(session: Session, backend_ids: Sequence[int]) -> dict[int, Wanted]:
    rows = session.execute(select(BackendFootprint.backend_id, BackendFootprint.rule_set_id,
                                  BackendFootprint.input_key, BackendFootprint.wanted, BackendFootprint.error)
                           .where(BackendFootprint.backend_id.in_(backend_ids)))
    return {b: Wanted(rs, key, dict(w), err) for b, rs, key, w, err in rows}


def _write(session: Session, stmt: Executable) -> None:
    bind = session.get_bind()
    if isinstance(bind, Engine):
        with bind.begin() as conn:
            conn.execute(stmt)
    else:  # a session on a caller's own connection: its transaction decides
        session.execute(stmt)


def store_rule_set_footprints(session: Session, rows: Sequence[dict[str, Any]]) -> None:
    """Store rule sets' footprints (immutable: a row already there stays)."""
    if rows:
        _write(session, insert(RuleSetFootprint).values(list(rows)).on_conflict_do_nothing())


def store_wanted(session: Session, backend_id: int, w: Wanted) -> None:
    row = {"backend_id": backend_id, "rule_set_id": w.rule_set_id, "input_key": w.input_key,
           "wanted": w.wanted, "error": w.error}
    stmt = insert(BackendFootprint).values(row)
    _write(session, stmt.on_conflict_do_update(
        index_elements=[BackendFootprint.backend_id],
        set_={k: stmt.excluded[k] for k in ("rule_set_id", "input_key", "wanted", "error")}
        | {"computed_at": text("now()")}))
