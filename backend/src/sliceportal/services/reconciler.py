"""The reconcile loop: every interval, read every backend back and repair drift.

A data plane that restarted empty is refilled with its last good rule set without an
operator; drift is recorded as a ``reconcile`` deployment and in the audit log.
"""

from __future__ import annotations

import logging
import threading

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.models import Backend
from sliceportal.services.deployments import reconcile

log = logging.getLogger(__name__)


class Reconciler:
    def __init__(self, sessions: sessionmaker[Session], interval_s: float) -> None:
        self._sessions, self._interval = sessions, interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="reconciler", daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        self._thread.join(timeout=self._interval + 5)

    def run_once(self) -> None:
        with self._sessions() as session:
            for backend in session.scalars(select(Backend).order_by(Backend.id)):
                try:
                    report = reconcile(session, backend)
                except Exception:  # one broken backend must not stop the others
                    log.exception("reconcile of backend %s failed", backend.name)
                    session.rollback()
                    continue
                if report is not None and not report.in_sync:
                    log.warning("backend %s drifted (%s); repaired=%s", backend.name, report.drift, report.repaired)

    def _loop(self) -> None:
        while not self._stop.wait(self._interval):
            self.run_once()
