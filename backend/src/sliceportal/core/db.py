"""Engine and session factory (one engine per database URL), and per-object advisory locks.

Advisory locks are how portal workers exclude each other without sharing memory: a
deploy, a rollback and a reconcile of one backend each hold the backend's lock for their
whole duration. The lock lives on a dedicated connection, so the work itself may commit
as often as it needs; if that connection dies (the database restarted), PostgreSQL
releases the lock by itself, so a crashed worker never leaves a backend locked.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache
from typing import Any

from sqlalchemy import Engine, create_engine, event, text
from sqlalchemy.exc import DBAPIError, DisconnectionError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core import jsontext

# classid of the two-key form pg_advisory_lock(int, int): keeps our locks apart from any
# other application's on the same database
BACKEND_LOCK_CLASS = 0x51CE
LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE of a lock wait that hit lock_timeout


# Connections kept open per process: at least the requests one worker serves at once (the
# API bench's 16 clients), so a burst does not open and close overflow connections (a
# PostgreSQL backend started per request); overflow covers the streams and control loops.
POOL_SIZE, MAX_OVERFLOW = 20, 20
# Backends one process drives at once (a slice deploy's fan-out, a reconcile pass), a thread
# each. Each holds two pooled connections (its session and the backend's advisory lock): a
# thread per backend exhausted the pool at 100 backends (every push waited on a connection
# another held, and the request failed as "database unavailable"). Few, because what a thread
# does between its waits is Python under one interpreter lock: at 100 local backends 4 threads
# gave a deploy of 6.4 s and a reconcile pass of 1.8 s, 8 threads 7.1 s and 2.1 s (more CPU
# spent switching; bench scale_backends, 2 cores). Remote backends wait longer on the network,
# which the 4 overlap.
BACKENDS_AT_ONCE = 4
# A connection idle longer than this is pinged before use (a restarted database leaves every
# pooled connection dead); one in continuous use is not (a ping is a round trip per request).
PING_IDLE_S = 1.0


@lru_cache(maxsize=8)
def engine_for(url: str) -> Engine:
    # connect_timeout bounds how long a request waits on a database that is down
    engine = create_engine(
        url,
        pool_size=POOL_SIZE,
        max_overflow=MAX_OVERFLOW,
        connect_args={"connect_timeout": 3},
        json_serializer=jsontext.dumps,  # rule sets, plans and diffs of every deploy (core/jsontext.py)
    )
    event.listen(engine.pool, "connect", _stamp_checkin)  # a new connection needs no ping
    event.listen(engine.pool, "checkin", _stamp_checkin)
    event.listen(engine.pool, "checkout", _ping_if_idle)
    return engine


def _stamp_checkin(_dbapi_conn: Any, record: Any) -> None:
    record.info["checked_in"] = time.monotonic()


def _ping_if_idle(dbapi_conn: Any, record: Any, _proxy: Any) -> None:
    """SQLAlchemy's pessimistic disconnect handling, only for connections that sat idle:
    raising DisconnectionError makes the pool discard this one and connect anew."""
    if time.monotonic() - record.info.get("checked_in", 0.0) < PING_IDLE_S:
        return
    try:
        with dbapi_conn.cursor() as cursor:
            cursor.execute("SELECT 1")
        dbapi_conn.rollback()
    except Exception as exc:  # any failure of a bare SELECT 1 means the connection is unusable
        raise DisconnectionError(str(exc)) from exc


def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url), expire_on_commit=False)


def autocommit_sessions(sessions: sessionmaker[Session]) -> sessionmaker[Session]:
    """Sessions on the same pool whose statements each commit by themselves, for requests
    that only read: no BEGIN before the first query and no ROLLBACK when the connection goes
    back to the pool, two of a read's round trips (~110 µs of CPU each request, measured).
    They give up nothing a read had: under READ COMMITTED each statement takes its own
    snapshot, so a transaction around a read's queries never made them consistent with each
    other. Not for writes: a transaction-scoped lock or a multi-statement change would end
    with each statement."""
    engine = sessions.kw["bind"]
    # info: what api/routing.py looks for to give such a session's connection back early
    return sessionmaker(
        engine.execution_options(isolation_level="AUTOCOMMIT"), expire_on_commit=False, info={"autocommit": True}
    )


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    with session_factory(url)() as session, session.begin():
        yield session


# parsed once (``text`` parses its parameters each time it is built: every push takes a lock)
_TRY_LOCK = text("SELECT pg_try_advisory_lock(:c, :k)")
_LOCK = text("SELECT pg_advisory_lock(:c, :k)")
_UNLOCK = text("SELECT pg_advisory_unlock(:c, :k)")


@contextmanager
def advisory_lock(engine: Engine, key: int, *, wait_s: float, cls: int = BACKEND_LOCK_CLASS) -> Iterator[bool]:
    """Hold the session-level advisory lock ``(cls, key)`` for the block; yields whether it was got.

    ``wait_s`` bounds the wait (0: try once). The caller decides what "not got" means
    (reconcile skips the backend; a deploy answers "busy").
    """
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    got = False
    try:
        # one round trip when the lock is free (almost always): a lock someone waits for is
        # granted to the waiter on release, so trying first takes it from nobody
        got = bool(conn.scalar(_TRY_LOCK, {"c": cls, "k": key}))
        if not got and wait_s > 0:
            # A blocking wait queues in PostgreSQL's lock manager, which grants the lock to
            # the waiter on release: a deploy is never starved by a reconcile that re-tries
            # every period (try-locks fail while someone waits). lock_timeout bounds the wait.
            conn.execute(text(f"SET lock_timeout = '{int(wait_s * 1000)}ms'"))
            try:
                conn.execute(_LOCK, {"c": cls, "k": key})
                got = True
            except OperationalError as exc:
                if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                    raise
            conn.execute(text("RESET lock_timeout"))
        yield got
    finally:
        if got:
            try:
                conn.execute(_UNLOCK, {"c": cls, "k": key})
            except DBAPIError:
                # the connection died with the database: the server already dropped the lock
                conn.invalidate()
        conn.close()
