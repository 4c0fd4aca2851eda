"""A thread that LISTENs on a PostgreSQL channel on a connection of its own, and listens again
when the connection breaks (database restart, ``pg_terminate_backend``, network).

The two listeners (the API workers' KPI fan-out, kpi/notify.py, and the controller's footprint
refresher, services/footprint_refresher.py) share the reconnecting: exponential backoff
(tenacity) over the failures of *this* outage -- a connection that stayed up ``stable_s`` and
broke is a new outage and waits the first step again, where a count over the thread's life
had a blip after a few earlier ones wait the maximum. What a subclass does with the
connection while it listens is its own (``serve``).
"""

from __future__ import annotations

import logging
import threading
import time
from abc import ABC, abstractmethod
from typing import ClassVar

import psycopg
from sqlalchemy import make_url
from tenacity import RetryCallState, Retrying, retry_if_exception_type

log = logging.getLogger(__name__)

CONNECTION_ERRORS: tuple[type[BaseException], ...] = (psycopg.OperationalError, psycopg.InterfaceError)


def libpq_url(database_url: str) -> str:
    """The SQLAlchemy URL (``postgresql+psycopg://``) as libpq's connection string."""
    return make_url(database_url).set(drivername="postgresql").render_as_string(hide_password=False)


class ChannelListener(ABC):
    thread_name: ClassVar[str]
    # what makes it listen again; anything else ends the thread (logged)
    retry_on: ClassVar[tuple[type[BaseException], ...]] = CONNECTION_ERRORS

    def __init__(
        self,
        database_url: str,
        channel: str,
        *,
        first_wait_s: float,
        max_wait_s: float,
        stable_s: float,
        join_s: float = 10.0,
    ) -> None:
        self._conninfo = libpq_url(database_url)
        self._channel = channel
        self._first_wait_s, self._max_wait_s, self._stable_s, self._join_s = first_wait_s, max_wait_s, stable_s, join_s
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.listening = threading.Event()  # set while LISTEN is in force
        self.connects = 0  # connections that listened
        self.last_wait = 0.0  # the backoff before the latest attempt to listen again
        self._failed = 0  # attempts since the connection last stayed up for stable_s
        self._listened_at: float | None = None  # when the current connection began to listen

    def start(self) -> None:
        self._stop.clear()
        self._thread = threading.Thread(target=self._run, name=self.thread_name, daemon=True)
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=self._join_s)

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    # -- what a subclass does --------------------------------------------------------------

    def listened(self, conn: psycopg.Connection) -> None:  # noqa: B027 (optional hook: nothing by default)
        """Called on each new connection once LISTEN is in force, before ``serve``."""

    @abstractmethod
    def serve(self, conn: psycopg.Connection) -> None:
        """Handle notifications until ``stopping``; an exception of ``retry_on`` listens again."""

    def lost(self, exc: BaseException | None, attempt: int, wait_s: float) -> None:
        log.warning("%s: %s; listening again in %.1f s (attempt %d)", self.thread_name, exc, wait_s, attempt)

    # -- the reconnecting --------------------------------------------------------------------

    def _run(self) -> None:
        retrying = Retrying(
            retry=retry_if_exception_type(self.retry_on),
            wait=self._wait,
            stop=lambda _state: self._stop.is_set(),
            sleep=self._backoff,
            before_sleep=self._before_sleep,
            reraise=True,
        )
        try:
            for attempt in retrying:
                with attempt:
                    self._listen()
        except self.retry_on:
            pass  # stopping while the database was unreachable
        except Exception:
            log.exception("%s stopped", self.thread_name)
            raise

    def _wait(self, _state: RetryCallState) -> float:
        if self._listened_at is not None and time.monotonic() - self._listened_at >= self._stable_s:
            self._failed = 0
        self._listened_at = None
        self.last_wait = min(self._max_wait_s, self._first_wait_s * 2**self._failed)
        self._failed += 1
        return self.last_wait

    def _backoff(self, seconds: float) -> None:
        self._stop.wait(seconds)  # stop() interrupts a backoff

    def _before_sleep(self, state: RetryCallState) -> None:
        self.listening.clear()
        exc = state.outcome.exception() if state.outcome else None
        self.lost(exc, state.attempt_number, self.last_wait)

    def _listen(self) -> None:
        with psycopg.connect(self._conninfo, autocommit=True, connect_timeout=3) as conn:
            conn.execute(f"LISTEN {self._channel}")
            self.connects += 1
            self.listened(conn)
            self._listened_at = time.monotonic()
            self.listening.set()
            self.serve(conn)
        self.listening.clear()
