"""The leading controller's duty that keeps slice status current (issue #28).

It LISTENs on ``sliceportal_footprint``, which the footprint-generation triggers NOTIFY on
the commit of any change to what a slice compiles from (migration 0018), and a rollback
NOTIFYs when it put an older rule set in force (services/footprint_push.py). On each
notification -- and every ``poll_s`` anyway, for what was committed while it was not
listening -- it recomputes the wanted digests of every backend whose stored ones are stale
(``slice_status.refresh_wanted``: one compile per such backend, nothing for the others). So
the first read after an edit finds them and compiles nothing; a read that comes before the
refresher has finished computes them itself, as it always did: late, never wrong.
"""

from __future__ import annotations

import logging
import time

import psycopg
from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.listen import ChannelListener
from sliceportal.models import Backend
from sliceportal.services.footprint_push import CHANNEL
from sliceportal.services.slice_status import refresh_wanted

log = logging.getLogger(__name__)

POLL_S = 5.0  # a pass without a notification: catches what was committed while not listening
WAKE_S = 0.2  # how often a quiet connection checks for stop()
FIRST_RETRY_S = 0.5  # then doubling up to poll_s while the database stays away
STABLE_S = 30.0  # a connection that listened this long and broke is a new outage


class FootprintRefresher(ChannelListener):
    thread_name = "footprint-refresher"
    # a configuration that breaks the refresh must not end the duty: everything listens again
    retry_on = (Exception,)

    def __init__(
        self, sessions: sessionmaker[Session], database_url: str, *, poll_s: float = POLL_S, stable_s: float = STABLE_S
    ) -> None:
        # backoff up to poll_s while the database stays away; a compile under way finishes on stop
        super().__init__(
            database_url, CHANNEL, first_wait_s=FIRST_RETRY_S, max_wait_s=poll_s, stable_s=stable_s, join_s=30.0
        )
        self._sessions, self._poll_s = sessions, poll_s
        self.passes = 0
        self.computed = 0  # backends whose wanted digests this refresher computed

    def run_once(self) -> list[int]:
        """One pass: the backends whose wanted digests were stale, now computed."""
        with self._sessions() as session:
            backends = list(session.scalars(select(Backend).order_by(Backend.id)))
            computed = refresh_wanted(session, backends) if backends else []
        self.passes += 1
        self.computed += len(computed)
        return computed

    def lost(self, exc: BaseException | None, attempt: int, wait_s: float) -> None:
        if isinstance(exc, (psycopg.Error, DBAPIError)):  # the database away: its first line says enough
            log.warning("footprint refresher: %s; again in %.1f s", str(exc).splitlines()[0], wait_s)
        else:
            log.warning("footprint refresher: pass failed; again in %.1f s", wait_s, exc_info=exc)

    def serve(self, conn: psycopg.Connection) -> None:
        due = 0.0  # listening now: a first pass covers what changed before
        while not self.stopping:
            if time.monotonic() >= due:
                self.run_once()
                due = time.monotonic() + self._poll_s
            # a notification (or several, folded into the next pass) makes the pass due now
            if any(True for _ in conn.notifies(timeout=WAKE_S, stop_after=1)):
                for _ in conn.notifies(timeout=0):  # the rest already queued: one pass covers them
                    pass
                due = 0.0
