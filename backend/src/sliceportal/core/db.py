"""Engine and session factory (one engine per database URL), and per-object advisory locks.

Advisory locks are how portal workers exclude each other without sharing memory: a
deploy, a rollback and a reconcile of one backend each hold the backend's lock for their
whole duration. The lock lives on a dedicated connection, so the work itself may commit
as often as it needs; if that connection dies (the database restarted), PostgreSQL
releases the lock by itself, so a crashed worker never leaves a backend locked.
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from functools import lru_cache

from sqlalchemy import Engine, create_engine, text
from sqlalchemy.exc import DBAPIError, OperationalError
from sqlalchemy.orm import Session, sessionmaker

# classid of the two-key form pg_advisory_lock(int, int): keeps our locks apart from any
# other application's on the same database
BACKEND_LOCK_CLASS = 0x51CE
LOCK_NOT_AVAILABLE = "55P03"  # SQLSTATE of a lock wait that hit lock_timeout


@lru_cache(maxsize=8)
def engine_for(url: str) -> Engine:
    # connect_timeout bounds how long a request waits on a database that is down
    return create_engine(url, pool_size=10, max_overflow=20, pool_pre_ping=True,
                         connect_args={"connect_timeout": 3})


def session_factory(url: str) -> sessionmaker[Session]:
    return sessionmaker(engine_for(url), expire_on_commit=False)


@contextmanager
def session_scope(url: str) -> Iterator[Session]:
    with session_factory(url)() as session, session.begin():
        yield session


@contextmanager
def advisory_lock(engine: Engine, key: int, *, wait_s: float, cls: int = BACKEND_LOCK_CLASS) -> Iterator[bool]:
    """Hold the session-level advisory lock ``(cls, key)`` for the block; yields whether it was got.

    ``wait_s`` bounds the wait (0: try once). The caller decides what "not got" means
    (reconcile skips the backend; a deploy answers "busy").
    """
    conn = engine.connect().execution_options(isolation_level="AUTOCOMMIT")
    got = False
    try:
        if wait_s <= 0:
            got = bool(conn.scalar(text("SELECT pg_try_advisory_lock(:c, :k)"), {"c": cls, "k": key}))
        else:
            # A blocking wait queues in PostgreSQL's lock manager, which grants the lock to
            # the waiter on release: a deploy is never starved by a reconcile that re-tries
            # every period (try-locks fail while someone waits). lock_timeout bounds the wait.
            conn.execute(text(f"SET lock_timeout = '{int(wait_s * 1000)}ms'"))
            try:
                conn.execute(text("SELECT pg_advisory_lock(:c, :k)"), {"c": cls, "k": key})
                got = True
            except OperationalError as exc:
                if getattr(exc.orig, "sqlstate", None) != LOCK_NOT_AVAILABLE:
                    raise
            conn.execute(text("RESET lock_timeout"))
        yield got
    finally:
        if got:
            try:
                conn.execute(text("SELECT pg_advisory_unlock(:c, :k)"), {"c": cls, "k": key})
            except DBAPIError:
                # the connection died with the database: the server already dropped the lock
                conn.invalidate()
        conn.close()
