"""The reconcile loop: every interval, read every backend back and repair drift.

A data plane that restarted empty is refilled with its last good rule set without an
operator; drift is recorded as a ``reconcile`` deployment and in the audit log. The loop
is a ``SupervisedLoop``: a failed pass (the database away) is logged, retried with
backoff, and shown on ``/health``; it never ends the loop. A backend whose deployment is
in flight is skipped for this pass (its lock is held), never compared half-written.
"""

from __future__ import annotations

import logging

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.loops import LoopRegistry, PeriodicDuty
from sliceportal.models import Backend
from sliceportal.services.deployments import reconcile
from sliceportal.services.errors import BusyError

log = logging.getLogger(__name__)


class Reconciler(PeriodicDuty):
    loop_name = "reconciler"

    def __init__(
        self, sessions: sessionmaker[Session], interval_s: float, registry: LoopRegistry | None = None
    ) -> None:
        super().__init__(interval_s, registry)
        self._sessions = sessions
        self.skipped = 0  # passes over a backend skipped because a deployment held it

    def run_once(self) -> None:
        """One pass over every backend; raises (so the loop backs off) when the database is away."""
        with self._sessions() as session:
            ids = list(session.scalars(select(Backend.id).order_by(Backend.id)))
            for backend_id in ids:
                backend = session.get(Backend, backend_id)
                if backend is None:
                    continue
                try:
                    report = reconcile(session, backend, lock_wait_s=0, periodic=True)
                except BusyError:
                    self.skipped += 1
                    session.rollback()
                    continue
                except DBAPIError:
                    session.rollback()
                    raise  # the database, not the backend: the whole pass failed
                except Exception:  # one broken backend must not stop the others
                    log.exception("reconcile of backend %s failed", backend.name)
                    session.rollback()
                    continue
                if report is not None and not report.reachable:
                    log.warning("backend %s unreachable: %s", backend.name, report.error)
                elif report is not None and not report.in_sync:
                    log.warning("backend %s drifted (%s); repaired=%s", backend.name, report.drift, report.repaired)
