"""The reconcile loop: every interval, read every backend back and repair drift, several
backends at once (``core/db.BACKENDS_AT_ONCE``: a pass over 100 backends one after another
took 10 s, issue #28).

A data plane that restarted empty is refilled with its last good rule set without an
operator; drift is recorded as a ``reconcile`` deployment and in the audit log. The loop
is a ``SupervisedLoop``: a failed pass (the database away) is logged, retried with
backoff, and shown on ``/health``; it never ends the loop. A backend whose deployment is
in flight is skipped for this pass (its lock is held), never compared half-written.
"""

from __future__ import annotations

import logging
from concurrent.futures import ThreadPoolExecutor

from sqlalchemy import select
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.db import BACKENDS_AT_ONCE
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
        """One pass over every backend, BACKENDS_AT_ONCE at a time (each on its own session and
        lock: a read-back mostly waits on its data plane); raises (so the loop backs off) when
        the database is away."""
        with self._sessions() as session:
            ids = list(session.scalars(select(Backend.id).order_by(Backend.id)))
        if not ids:
            return
        with ThreadPoolExecutor(min(len(ids), BACKENDS_AT_ONCE), thread_name_prefix="reconcile") as pool:
            outcomes = list(pool.map(self._one, ids))
        self.skipped += sum(isinstance(o, BusyError) for o in outcomes)
        lost = [o for o in outcomes if isinstance(o, DBAPIError)]
        if lost:
            raise lost[0]  # the database, not a backend: the whole pass failed

    def _one(self, backend_id: int) -> BusyError | DBAPIError | None:
        """Reconcile one backend; what stopped it when the pass must know (a deployment held it,
        the database is away), else None."""
        with self._sessions() as session:
            backend = session.get(Backend, backend_id)
            if backend is None:
                return None
            try:
                report = reconcile(session, backend, lock_wait_s=0, periodic=True)
            except (BusyError, DBAPIError) as exc:
                return exc
            except Exception:  # one broken backend must not stop the others
                log.exception("reconcile of backend %s failed", backend.name)
                return None
            if report is not None and not report.reachable:
                log.warning("backend %s unreachable: %s", backend.name, report.error)
            elif report is not None and not report.in_sync:
                log.warning("backend %s drifted (%s); repaired=%s", backend.name, report.drift, report.repaired)
            return None
