"""Deploys and rollbacks are jobs: their ``deployment`` row is the job record (issue #26).

The process that pushes a deployment names itself in the row (``runner``, host:pid) and
renews ``heartbeat_at`` every ``HEARTBEAT_S`` from a thread of its own, with the push's
latest progress event (``progress``): anyone reading the row sees a live job and how far it
got. A row still ``running`` whose heartbeat is older than ``STALE_S`` belongs to a runner
that died (uvicorn replaced the worker, OOM, SIGKILL) or lost the database: the leading
controller's ``JobResumer`` takes the backend's lock and finishes the push
(``services.deployments.resume``). A push diffs against what the data plane holds
(``drivers/push.py``), so running an interrupted one again is safe.

Times are the database's (``clock_timestamp()``): runners and the controller may live on
hosts whose clocks disagree.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable
from datetime import timedelta
from types import TracebackType
from typing import Self

from sqlalchemy import ColumnElement, Connection, Engine, func, select, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.loops import LoopRegistry, PeriodicDuty
from sliceportal.drivers.contract import ProgressEvent
from sliceportal.models import Deployment, DeploymentStatus, ImportJob

log = logging.getLogger(__name__)

HEARTBEAT_S = 1.0  # how often a runner renews its job's heartbeat
# A heartbeat this old means its runner is gone. Ten beats: a runner starved of CPU on a busy
# host (load 20+, issue #26) still beats within it, and a database blip shorter than it lets a
# live runner finish its own job instead of racing a resumer on the data plane.
STALE_S = 10.0
RESUME_EVERY_S = 1.0  # how often the leader looks for stale jobs


def runner_name() -> str:
    """This process, as a job's ``runner`` / ``resumed_by`` names it."""
    return f"{socket.gethostname()}:{os.getpid()}"


JobModel = type[Deployment] | type[ImportJob]  # job records: id, status, heartbeat_at


def stale(stale_s: float | None = None, model: JobModel = Deployment) -> ColumnElement[bool]:
    """Running job rows whose heartbeat is older than ``stale_s`` (default ``STALE_S``), by the database's clock."""
    age = timedelta(seconds=STALE_S if stale_s is None else stale_s)
    return (
        (model.status == DeploymentStatus.RUNNING)
        & model.heartbeat_at.is_not(None)
        & (model.heartbeat_at < func.clock_timestamp() - age)
    )


class Heartbeat:
    """Renews a running job's heartbeat (and its latest progress) until the block ends.

    Its own thread and sessions: the push holds the caller's session (and the backend's lock
    on it) for its whole duration. The thread starts once the job has run for one period
    (``_Waker``): most pushes end sooner, and a thread started and joined for each backend of a
    fan-out was CPU of its own. A beat that fails (the database away) is retried at the next
    one; the job is not stopped for it.
    """

    def __init__(
        self,
        bind: Engine | Connection,
        deployment_id: int,
        forward: Callable[[ProgressEvent], None] | None = None,
        model: JobModel = Deployment,
    ) -> None:
        # sessions of its own on the job's database, made when it first beats (a sessionmaker
        # is a class made at run time: not one for every push of a fan-out)
        self._bind, self._id, self._forward, self._model = bind, deployment_id, forward, model
        self._sessions: sessionmaker[Session] | None = None
        self._latest: ProgressEvent | None = None
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=f"job-heartbeat-{deployment_id}", daemon=True)

    def progress(self, event: ProgressEvent) -> None:
        """The push's progress callback: kept for the next beat, and passed on."""
        self._latest = event
        if self._forward is not None:
            self._forward(event)

    def beat(self) -> None:
        values: dict[str, object] = {"heartbeat_at": func.clock_timestamp()}
        if self._latest is not None:
            values["progress"] = self._latest.model_dump(mode="json")
        if self._sessions is None:
            self._sessions = sessionmaker(bind=self._bind)
        with self._sessions() as session:
            model = self._model
            session.execute(
                update(model).where(model.id == self._id, model.status == DeploymentStatus.RUNNING).values(**values)
            )
            session.commit()

    def _run(self) -> None:
        # started one period after the job (``_Waker``): a beat is due at once
        while not self._stop.is_set():
            try:
                self.beat()
            except DBAPIError as exc:
                log.warning(
                    "job %d: heartbeat not written (retried in %g s): %s",
                    self._id,
                    HEARTBEAT_S,
                    str(exc).splitlines()[0],
                )
            except Exception:  # a beat must never end the thread while the push goes on
                log.exception("job %d: heartbeat failed", self._id)
            self._stop.wait(HEARTBEAT_S)

    def wake(self) -> None:
        """Start beating (``_Waker``, once the job has run for one period)."""
        self._thread.start()

    def __enter__(self) -> Self:
        _WAKER.schedule(self)
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        if _WAKER.started(self):
            self._thread.join(timeout=HEARTBEAT_S + 5)


class _Waker:
    """One thread for the process that starts each job's heartbeat thread once the job has run
    for ``HEARTBEAT_S``; a job that ends before is never given one."""

    def __init__(self) -> None:
        self._due: dict[Heartbeat, float] = {}
        self._cond = threading.Condition()
        self._thread: threading.Thread | None = None

    def schedule(self, hb: Heartbeat) -> None:
        with self._cond:
            self._due[hb] = time.monotonic() + HEARTBEAT_S
            if self._thread is None or not self._thread.is_alive():  # none yet, or a fork's child
                self._thread = threading.Thread(target=self._run, name="job-heartbeat-waker", daemon=True)
                self._thread.start()
            self._cond.notify()

    def started(self, hb: Heartbeat) -> bool:
        """Take ``hb`` off the schedule; whether its thread was started (then it is to be joined)."""
        with self._cond:
            return self._due.pop(hb, None) is None

    def _run(self) -> None:
        with self._cond:
            while True:
                now = time.monotonic()
                for hb in [hb for hb, at in self._due.items() if at <= now]:
                    # under the lock: ``started`` never sees a job off the schedule and not started
                    del self._due[hb]
                    hb.wake()
                self._cond.wait(min(self._due.values(), default=now + 3600) - now)


_WAKER = _Waker()


class JobResumer(PeriodicDuty):
    """The leader's duty: finish every job whose runner died (its heartbeat went stale): deploys
    and rollbacks, then CSV imports.

    One pass every ``RESUME_EVERY_S``; a backend whose lock is held is skipped (its holder is
    alive, or another pass already resumes it). A failed pass (the database away) is retried
    by the supervised loop with backoff.
    """

    loop_name = "deploy-jobs"

    def __init__(
        self, sessions: sessionmaker[Session], period_s: float = RESUME_EVERY_S, registry: LoopRegistry | None = None
    ) -> None:
        super().__init__(period_s, registry)
        self._sessions = sessions
        self.resumed = 0  # jobs this duty finished

    def run_once(self) -> None:
        from sliceportal.services.deployments import resume_stale  # deployments uses this module's Heartbeat

        with self._sessions() as session:
            backend_ids = list(session.scalars(select(Deployment.backend_id).where(stale()).distinct()))
            session.rollback()
            for backend_id in backend_ids:
                try:
                    self.resumed += resume_stale(session, backend_id, by=runner_name())
                except DBAPIError:
                    session.rollback()
                    raise  # the database, not the job: the whole pass failed
                except Exception:  # one broken backend must not keep the others' jobs running
                    log.exception("resuming the interrupted deployment(s) of backend %s failed", backend_id)
                    session.rollback()
        # CSV imports whose process died: imported again from the stored upload (services/import_jobs.py)
        from sliceportal.services.import_jobs import resume_stale as resume_imports

        self.resumed += resume_imports(self._sessions, by=runner_name())
