"""Leader election: a lease on a PostgreSQL session-level advisory lock.

Any number of candidates (controller processes, on any host) share one database. Each
tries ``pg_try_advisory_lock(LEADER_LOCK_CLASS, key)`` every period on a connection of its
own (AUTOCOMMIT, never in a transaction); the one that gets it leads for as long as that
connection lives. PostgreSQL releases a session lock the moment its session ends, so a
leader that dies (kill -9, a lost host) or whose session is terminated frees the lease by
itself and another candidate takes it at its next try, within one period.

The holder watches its connection: between checks it waits on the connection's socket, so
a terminated session (the server closes it) is noticed at once, and every period it asks
the server whether it still holds the lock. A dead connection means the lock is already
gone, possibly to another candidate: the duties stop at once (``on_lose``), before any
attempt to get the lease again.
"""

from __future__ import annotations

import logging
import os
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime

from sqlalchemy import Connection, Engine, create_engine, text
from sqlalchemy.pool import NullPool

log = logging.getLogger(__name__)

# classid of pg_advisory_lock(int, int): apart from the per-backend deploy locks (0x51CE, core/db.py)
LEADER_LOCK_CLASS = 0x51CF
CONTROLLER_KEY = 1  # the controller's lease; other roles would take other keys
# How long a socket wait lasts before the stop flag is looked at again.
WAKE_S = 0.1


@dataclass(frozen=True)
class Identity:
    """Who a candidate is, as the heartbeat shows it."""

    host: str = field(default_factory=socket.gethostname)
    pid: int = field(default_factory=os.getpid)

    def __str__(self) -> str:
        return f"{self.host}:{self.pid}"


def lease_engine(database_url: str) -> Engine:
    """Connections of their own (no pool: a dead one is never handed out again); TCP
    keepalives so that a leader cut off from the server notices within seconds, like the
    server does."""
    return create_engine(
        database_url,
        poolclass=NullPool,
        connect_args={
            "connect_timeout": 3,
            "keepalives": 1,
            "keepalives_idle": 5,
            "keepalives_interval": 2,
            "keepalives_count": 2,
            "application_name": "sliceportal-leader",
        },
    )


LOSER_WAIT_PERIODS = 1.5  # periods a candidate that lost the lease waits before competing again


class LeaderLease:
    """Competes for the lease every ``period_s``; runs ``on_acquire`` when it gets it and
    ``on_lose`` when it loses it (or is stopped while holding it), both on its own thread.

    ``on_acquire`` may take a while (starting the testbed); the connection is checked
    again right after it returns.
    """

    def __init__(
        self,
        database_url: str,
        period_s: float,
        *,
        key: int = CONTROLLER_KEY,
        on_acquire: Callable[[], None] = lambda: None,
        on_lose: Callable[[str], None] = lambda why: None,
        on_held_elsewhere: Callable[[], None] = lambda: None,
        name: str = "leader-lease",
    ) -> None:
        if period_s <= 0:
            raise ValueError("period_s must be > 0")
        self.period_s, self.key, self.name = period_s, key, name
        self._engine = lease_engine(database_url)
        self._on_acquire, self._on_lose = on_acquire, on_lose
        # the database answered and another session holds the lease: someone else leads
        self._on_held_elsewhere = on_held_elsewhere
        self._conn: Connection | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.leading_since: datetime | None = None
        self.last_error = ""
        self.terms = 0  # times this candidate got the lease

    # ---- life cycle ----------------------------------------------------------------

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)
        self._thread.start()

    def stop(self, timeout_s: float = 60.0) -> None:
        """Stop competing; a holder runs ``on_lose`` and releases the lease (by closing its session)."""
        self._stop.set()
        if self._thread is not None and self._thread is not threading.current_thread():
            self._thread.join(timeout=timeout_s)
        self._engine.dispose()

    @property
    def leading(self) -> bool:
        return self.leading_since is not None

    @property
    def backend_pid(self) -> int | None:
        """The server process of the lease's session (what ``pg_terminate_backend`` ends)."""
        conn = self._conn
        return None if conn is None else int(conn.connection.dbapi_connection.info.backend_pid)  # type: ignore[union-attr]

    # ---- one candidate ---------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            if self.leading:
                self._hold()
                if not self.leading:
                    # a lost lease goes to the candidates already waiting for it: each tries again
                    # within a period of the loss, so the loser waits longer than that. After one
                    # period it raced them and won its own lease back often enough (CI: 2 runs in 3)
                    self._stop.wait(self.period_s * LOSER_WAIT_PERIODS)
            else:
                if self._try_acquire():
                    continue  # a holder: check at once that the duties started on a live lease
                self._stop.wait(self.period_s)
        if self.leading:
            self._lose("stopped")

    def _try_acquire(self) -> bool:
        conn = None
        try:
            conn = self._engine.connect().execution_options(isolation_level="AUTOCOMMIT")
            got = bool(
                conn.scalar(text("SELECT pg_try_advisory_lock(:c, :k)"), {"c": LEADER_LOCK_CLASS, "k": self.key})
            )
        except Exception as exc:  # the database away: try again next period
            self._note_error(exc)
            if conn is not None:
                self._discard(conn)
            return False
        if not got:
            conn.close()
            try:
                self._on_held_elsewhere()
            except Exception:
                log.exception("%s: on_held_elsewhere failed", self.name)
            return False
        self._conn, self.leading_since, self.last_error = conn, datetime.now(UTC), ""
        self.terms += 1
        log.info(
            "%s: leading (lease %#x/%d, database session %s)", self.name, LEADER_LOCK_CLASS, self.key, self.backend_pid
        )
        try:
            self._on_acquire()
        except Exception:  # the duties failed to start: give the lease to someone who can
            log.exception("%s: starting the duties failed; giving the lease up", self.name)
            self._lose("the duties failed to start")
            self._stop.wait(self.period_s)
        return True

    def _hold(self) -> None:
        """Wait one period watching the lease's socket, then check that the lease is still ours."""
        conn = self._conn
        assert conn is not None
        deadline = time.monotonic() + self.period_s
        try:
            fd = conn.connection.dbapi_connection.fileno()  # type: ignore[union-attr]
        except Exception as exc:
            self._lose(f"the lease's connection is unusable: {exc}")
            return
        poller = select.poll()
        poller.register(fd, select.POLLIN | select.POLLERR | select.POLLHUP)
        while not self._stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                break
            try:
                readable = poller.poll(min(WAKE_S, left) * 1000)
            except (OSError, ValueError) as exc:  # the socket is gone
                self._lose(f"the lease's connection is gone: {exc}")
                return
            if readable:  # nothing is asked on it: the server speaks only to end the session
                break
        if self._stop.is_set():
            return
        try:
            held = bool(
                conn.scalar(
                    text(
                        "SELECT EXISTS (SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted"
                        " AND pid = pg_backend_pid() AND classid = :c AND objid = :k AND objsubid = 2)"
                    ),
                    {"c": LEADER_LOCK_CLASS, "k": self.key},
                )
            )
        except Exception as exc:
            self._note_error(exc)
            self._lose(f"the lease's database session ended: {self.last_error}")
            return
        if not held:
            self._lose("the lease is no longer held by this session")

    def _lose(self, why: str) -> None:
        conn, self._conn = self._conn, None
        self.leading_since = None
        log.warning("%s: no longer leading: %s", self.name, why)
        try:
            # duties first: a lease given up on purpose is released only once they stopped, so
            # two leaders never overlap (a dead session's lock was released already)
            self._on_lose(why)
        except Exception:
            log.exception("%s: stopping the duties failed", self.name)
        finally:
            if conn is not None:
                self._discard(conn)  # closing the session releases the lock if it still had it

    @staticmethod
    def _discard(conn: Connection) -> None:
        try:
            conn.invalidate()
            conn.close()
        except Exception:  # already dead: nothing to release
            pass

    def _note_error(self, exc: BaseException) -> None:
        self.last_error = (str(getattr(exc, "orig", None) or exc).splitlines() or [""])[0][:300]
