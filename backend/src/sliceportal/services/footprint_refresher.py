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
import threading
import time

import psycopg
from sqlalchemy import make_url, select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.models import Backend
from sliceportal.services.footprint_push import CHANNEL
from sliceportal.services.slice_status import refresh_wanted

log = logging.getLogger(__name__)

POLL_S = 5.0  # a pass without a notification: catches what was committed while not listening
WAKE_S = 0.2  # how often a quiet connection checks for stop()
FIRST_RETRY_S = 0.5  # then doubling up to poll_s while the database stays away
STABLE_S = 30.0  # a connection that listened this long and broke is a new outage


class FootprintRefresher:
    def __init__(
        self, sessions: sessionmaker[Session], database_url: str, *, poll_s: float = POLL_S, stable_s: float = STABLE_S
    ) -> None:
        self._sessions, self._poll_s, self._stable_s = sessions, poll_s, stable_s
        self._conninfo = make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = threading.Event()
        self.passes = 0
        self.computed = 0  # backends whose wanted digests this refresher computed
        self.last_wait = 0.0  # the backoff before its latest attempt to listen again
        self._listened_at: float | None = None
        self.connects = 0  # connections that listened

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name="footprint-refresher", daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=30)  # a compile under way finishes first

    def run_once(self) -> list[int]:
        """One pass: the backends whose wanted digests were stale, now computed."""
        with self._sessions() as session:
            backends = list(session.scalars(select(Backend).order_by(Backend.id)))
            computed = refresh_wanted(session, backends) if backends else []
        self.passes += 1
        self.computed += len(computed)
        return computed

    def _run(self) -> None:
        failed = 0  # attempts in a row
        trace: BaseException | None
        while not self._stop.is_set():
            try:
                self._listen()
                continue  # returned: stopping
            except (psycopg.Error, DBAPIError) as exc:  # the database away: listen again when it is back
                why, trace = str(exc).splitlines()[0], None
            except Exception as exc:  # a configuration that breaks the refresh must not end the duty
                why, trace = "pass failed", exc  # with its traceback
            # a connection that stayed up STABLE_S broke: a new outage, backoff anew (a pass that
            # fails every time it listens keeps doubling)
            stable = self._listened_at is not None and time.monotonic() - self._listened_at >= self._stable_s
            failed = 1 if stable else failed + 1
            self._listened_at = None
            self.listening.clear()
            self.last_wait = min(FIRST_RETRY_S * 2 ** (failed - 1), self._poll_s)
            log.warning("footprint refresher: %s; again in %.1f s", why, self.last_wait, exc_info=trace)
            self._stop.wait(self.last_wait)

    def _listen(self) -> None:
        with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"LISTEN {CHANNEL}")
            self._listened_at = time.monotonic()
            self.connects += 1
            self.listening.set()
            due = 0.0  # listening now: a first pass covers what changed before
            while not self._stop.is_set():
                if time.monotonic() >= due:
                    self.run_once()
                    due = time.monotonic() + self._poll_s
                # a notification (or several, folded into the next pass) makes the pass due now
                if any(True for _ in conn.notifies(timeout=WAKE_S, stop_after=1)):
                    for _ in conn.notifies(timeout=0):  # the rest already queued: one pass covers them
                        pass
                    due = 0.0
