"""Who a credential is, remembered by each API process while nothing about it can have changed.

Checking a bearer token or an API key is a database lookup (its login session or key, its
user), and it ran on every request: with the thread-pool hop it needs, ~0.3 ms of a read's
~2.5 ms of CPU (bench/api_latency.py). Here a credential that passed is remembered with its
``Principal`` until the first of: its token's or login session's expiry, the minute after
which an API key's last use is due to be written again, ``TTL_S``, or *any* change to the
tables the check reads (``user_account``, ``auth_session``, ``api_key``).

The changes are learnt two ways, so that logout, a password change, disabling a user and
revoking a key still end the credential at once:

- in this process, at the commit itself: a session that updated or deleted rows of those
  tables (ORM objects or bulk statements) clears every cache of the process on commit,
  before the request that made the change answers;
- from any process (other workers, the CLI, ``psql``): triggers on the three tables NOTIFY
  ``sliceportal_auth`` (migration 0023), which ``AuthListener`` receives on a connection of
  its own. PostgreSQL delivers a NOTIFY on commit, so another worker stops accepting a
  revoked credential within the delivery time (milliseconds).

The cache answers only while that connection LISTENs (after each reconnect it starts empty,
since notifications sent while it was down are lost), so a broken channel costs the lookups
again and never stale answers. A lookup that began before a change and finishes after it is
not remembered (``generation``). Only successes are remembered; a refused credential is
checked again each time.
"""

from __future__ import annotations

import hashlib
import threading
import time
import weakref
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

import psycopg
from sqlalchemy import event
from sqlalchemy.orm import ORMExecuteState, Session

from sliceportal.core.listen import ChannelListener

if TYPE_CHECKING:
    from sliceportal.api.deps import Principal

CHANNEL = "sliceportal_auth"
AUTH_TABLES = frozenset({"user_account", "auth_session", "api_key"})
TTL_S = 30.0  # a bound on a credential remembered across a change whose notice was lost
MAX_ENTRIES = 10_000  # distinct credentials in use at once; past it, the oldest are forgotten


def credential_key(credential: str) -> str:
    """What the cache is keyed by: a digest, so that no secret outlives its request here."""
    return hashlib.sha256(credential.encode()).hexdigest()


class PrincipalCache:
    def __init__(self, ttl_s: float = TTL_S, max_entries: int = MAX_ENTRIES) -> None:
        self._ttl_s, self._max = ttl_s, max_entries
        self._entries: dict[str, tuple[Principal, float]] = {}  # key -> (principal, valid until, epoch s)
        self._lock = threading.Lock()
        self.generation = 0  # advanced by every clear: a lookup older than it is not remembered
        self.listening: threading.Event = threading.Event()  # set by the listener while it LISTENs
        _CACHES.add(self)

    def get(self, key: str) -> Principal | None:
        if not self.listening.is_set():
            return None
        hit = self._entries.get(key)
        if hit is None:
            return None
        principal, valid_until = hit
        if time.time() >= valid_until:
            self._entries.pop(key, None)
            return None
        return principal

    def put(self, key: str, principal: Principal, valid_until: float, generation: int) -> None:
        """Remember ``principal`` until ``valid_until`` (epoch s) if nothing changed since the
        lookup that found it began (``generation``, read before it)."""
        with self._lock:
            if generation != self.generation or not self.listening.is_set():
                return
            if len(self._entries) >= self._max:
                del self._entries[next(iter(self._entries))]
            self._entries[key] = (principal, min(valid_until, time.time() + self._ttl_s))

    def clear(self) -> None:
        with self._lock:
            self.generation += 1
            self._entries.clear()


# Every cache of this process (one per app; tests build many): a commit clears them all.
_CACHES: weakref.WeakSet[PrincipalCache] = weakref.WeakSet()


def _clear_all() -> None:
    for cache in list(_CACHES):
        cache.clear()


def _touches_auth(objects: Iterable[Any]) -> bool:
    return any(getattr(o, "__tablename__", None) in AUTH_TABLES for o in objects)


@event.listens_for(Session, "after_flush")
def _flushed(session: Session, _context: Any) -> None:
    # new rows change no remembered credential (a new login or key is looked up when used)
    if _touches_auth(session.dirty) or _touches_auth(session.deleted):
        session.info["auth_changed"] = True


@event.listens_for(Session, "do_orm_execute")
def _executed(state: ORMExecuteState) -> None:
    if not (state.is_update or state.is_delete) or state.bind_mapper is None:
        return
    if getattr(state.bind_mapper.persist_selectable, "name", None) in AUTH_TABLES:
        state.session.info["auth_changed"] = True


@event.listens_for(Session, "after_commit")
def _committed(session: Session) -> None:
    if session.info.pop("auth_changed", False):
        _clear_all()


@event.listens_for(Session, "after_soft_rollback")
def _rolled_back(session: Session, _previous: Any) -> None:
    session.info.pop("auth_changed", None)  # what it changed did not happen


RECONNECT_FIRST_S, RECONNECT_MAX_S, STABLE_S = 0.1, 5.0, 30.0


class AuthListener(ChannelListener):
    """Clears ``cache`` on every notice of a change by any process; marks it usable only while
    it LISTENs."""

    thread_name = "auth-listener"

    def __init__(self, database_url: str, cache: PrincipalCache, *, poll_s: float = 0.1) -> None:
        super().__init__(
            database_url, CHANNEL, first_wait_s=RECONNECT_FIRST_S, max_wait_s=RECONNECT_MAX_S, stable_s=STABLE_S
        )
        self.cache = cache
        self.notices = 0
        self._poll_s = poll_s  # how often a quiet connection checks for stop()
        # the cache follows this listener's state: ``listening`` is the cache's own event
        self.listening = cache.listening

    def listened(self, conn: psycopg.Connection) -> None:
        self.cache.clear()  # what changed while the channel was down was not heard

    def lost(self, exc: BaseException | None, attempt: int, wait_s: float) -> None:
        self.cache.clear()
        super().lost(exc, attempt, wait_s)

    def serve(self, conn: psycopg.Connection) -> None:
        while not self.stopping:
            for _notice in conn.notifies(timeout=self._poll_s):
                self.notices += 1
                self.cache.clear()
                if self.stopping:
                    break

    def stop(self) -> None:
        super().stop()
        self.listening.clear()


def start_listener(database_url: str, cache: PrincipalCache, wait_s: float = 3.0) -> AuthListener:
    """A started listener, LISTENing already unless the database is unreachable for ``wait_s``
    (until it LISTENs, every request is checked against the database)."""
    listener = AuthListener(database_url, cache)
    listener.start()
    listener.listening.wait(wait_s)
    return listener
