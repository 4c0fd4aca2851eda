"""The controller: what the cluster runs once, in whichever process holds the lease.

While it leads, a ``Controller`` runs the reconciler, the health prober and (``settings.
testbed``) the live testbed with its KPI collector, and beats: every ``BEAT_S`` it writes
its heartbeat (host, pid, since, its loops) and the testbed's state to the database and
applies the testbed commands the API recorded (``control/state.py``). When it loses the
lease it stops all of that at once; the testbed tears its namespaces down. Any number of
controllers may run (``sliceportal controller``, one per host or a spare): one leads, the
others take over within one lease period when it dies.

The API processes start none of this (``api/main.py``): they read what the leader reports.
"""

from __future__ import annotations

import logging
import threading
import time
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from sqlalchemy.orm import Session, sessionmaker

from sliceportal.control import state
from sliceportal.control.extensions import BackendDown, ControllerExtension, ExtensionContext, find_factory
from sliceportal.control.leader import Identity, LeaderLease
from sliceportal.core import gc_policy
from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.core.loops import LOOPS, SupervisedLoop
from sliceportal.kpi.collector import KpiCollector
from sliceportal.kpi.hub import KpiHub
from sliceportal.models.controller import END
from sliceportal.schemas.testbed import TestbedState
from sliceportal.services.backends import pooled_counters
from sliceportal.services.deployments import interrupt_all_orphans
from sliceportal.services.footprint_refresher import FootprintRefresher
from sliceportal.services.health_probe import HealthProber
from sliceportal.services.jobs import JobResumer
from sliceportal.services.reconciler import Reconciler

log = logging.getLogger(__name__)

BEAT_S = 0.5  # heartbeat, testbed report and command poll
SUPERVISE_EVERY_S = 1.0  # a loop whose thread died is restarted this soon
# how long a testbed is kept after the lease went with the database, waiting for this
# controller to lead again (a longer outage restarts it as before)
PARK_MAX_S = 120.0


class Controller:
    def __init__(
        self, settings: Settings, database_url: str, *, hub: KpiHub | None = None, period_s: float | None = None
    ) -> None:
        self.settings, self.database_url = settings, database_url
        self.identity = Identity()
        self.sessions: sessionmaker[Session] = session_factory(database_url)
        # points are published to every API process by ingest's NOTIFY; a hub here only
        # serves whoever shares this process (none in production)
        self.hub = hub or KpiHub()
        self.period_s = period_s or settings.controller_period_s
        self.lease = LeaderLease(
            database_url,
            self.period_s,
            on_acquire=self._lead,
            on_lose=self._step_down,
            on_held_elsewhere=self._drop_parked,
            name="controller-lease",
        )
        # the testbed is an extension found through its entry point (control/extensions.py), never
        # imported: None when the setting is off or no installed package provides one
        self._testbed_factory = find_factory() if settings.testbed else None
        self.testbed: ControllerExtension | None = None
        # the testbed of a term that ended without a stop (the database went away): kept, data
        # planes and their rules, for this controller's next term (issue #26); see _step_down
        self.parked: ControllerExtension | None = None
        self._parked_at = 0.0
        self.testbed_starts = 0  # testbeds this controller started (a kept one is not started again)
        self.since: datetime | None = None
        self._duties: list[Reconciler | HealthProber | KpiCollector | FootprintRefresher | JobResumer] = []
        self._beat: SupervisedLoop | None = None
        self._starting_since: datetime | None = None
        self._ready = threading.Event()  # leading, and every duty started
        self._stop = threading.Event()
        self._supervisor: threading.Thread | None = None
        self._lock = threading.Lock()  # duties start and stop one at a time

    # ---- life cycle -------------------------------------------------------------------

    def start(self) -> None:
        gc_policy.apply()
        self._stop.clear()
        self._supervisor = threading.Thread(target=self._supervise, name="controller-supervisor", daemon=True)
        self._supervisor.start()
        self.lease.start()

    def stop(self) -> None:
        """Stop leading (the duties first, then the lease is released) and competing."""
        self._stop.set()
        self.lease.stop()
        if self._supervisor is not None:
            self._supervisor.join(timeout=5)
        self._drop_parked("the controller stopped")

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.stop()

    @property
    def leading(self) -> bool:
        return self.lease.leading

    def wait_ready(self, timeout_s: float) -> bool:
        """Until this controller leads with every duty started (False: it did not within ``timeout_s``)."""
        return self._ready.wait(timeout_s)

    def _supervise(self) -> None:
        # the process's supervised loops (ours and the testbed's) are restarted when their thread died
        while not self._stop.wait(SUPERVISE_EVERY_S):
            try:
                LOOPS.check()
            except Exception:
                log.exception("loop supervisor check failed")
            if self.parked is not None and time.monotonic() - self._parked_at > PARK_MAX_S:
                self._drop_parked(f"not leading again within {PARK_MAX_S:g} s")

    # ---- leading ------------------------------------------------------------------------

    def _lead(self) -> None:
        with self._lock:
            self.since = datetime.now(UTC)
            self._starting_since = self.since
            log.info("controller %s leads", self.identity)
            try:
                n = interrupt_all_orphans(self.sessions)
                if n:
                    log.warning("%d deployment(s) left running by a dead process marked failed (interrupted)", n)
            except Exception as exc:  # the database away: the lease's check sees it next
                log.warning("could not end interrupted deployments: %s", str(exc).splitlines()[0])
            # the beat first: the API shows who leads and that the testbed is starting
            self._beat = SupervisedLoop("controller-beat", BEAT_S, self._beat_step)
            self._beat.run_once()
            self._beat.start()
            kept = self._adopt_parked()
            if kept is not None:
                self.testbed = kept
            elif self._testbed_factory is not None:
                testbed = self._testbed_factory(ExtensionContext(self.sessions, self.hub, self.settings))
                testbed.start()  # never raises: a testbed that failed says why in its state
                self.testbed = testbed
                self.testbed_starts += 1
            # After the testbed: its planes get new addresses and agent tokens at every start,
            # and a reconcile or probe begun before it recorded them would call the planes of
            # this run unreachable with the last run's options.
            if self.settings.reconcile_interval_s > 0:
                self._duties = [
                    Reconciler(self.sessions, self.settings.reconcile_interval_s),
                    HealthProber(self.sessions, settings=self.settings),
                ]
                for duty in self._duties:
                    duty.start()
            # deploys and rollbacks whose process died mid-push are finished here (services/jobs.py)
            resumer = JobResumer(self.sessions)
            resumer.start()
            self._duties.append(resumer)
            if self.settings.kpi_interval_s > 0:
                # every registered backend's own counters into KPI samples, the testbed's planes too:
                # its meter's end-to-end samples (source 'testbed') stand beside them (#25 item 4)
                collector = KpiCollector(self.sessions, pooled_counters, self.settings.kpi_interval_s)
                collector.start()
                self._duties.append(collector)
            # slice status kept current: wanted footprints computed on each change (issue #28)
            refresher = FootprintRefresher(self.sessions, self.database_url)
            refresher.start()
            self._duties.append(refresher)
            self._starting_since = None
            self._beat.run_once()  # the testbed's first state, before anyone waits a beat
            self._ready.set()

    def _step_down(self, why: str) -> None:
        with self._lock:
            self._ready.clear()
            if self._beat is not None:
                self._beat.stop(timeout_s=5)
                self._beat = None
            for duty in self._duties:
                duty.stop()
            self._duties = []
            if self.testbed is not None:
                if why == "stopped" or not self.testbed.running:
                    self.testbed.stop()  # its namespaces and processes go with it
                else:
                    # The lease went with the database session (an outage, a terminated
                    # session): nothing says another controller leads, and restarting the
                    # data planes empty would cut every slice's traffic for a database blip.
                    # Kept until this controller leads again (then adopted, unless another led
                    # meanwhile) or another is seen holding the lease (then stopped at once).
                    self.parked, self._parked_at = self.testbed, time.monotonic()
                    log.warning("controller %s: testbed kept running while the lease is away", self.identity)
                self.testbed = None
            if why == "stopped":
                # still holding the lease (it is released after this): say so to the API at once
                try:
                    with self.sessions() as session:
                        state.report_testbed(
                            session,
                            self.identity.host,
                            self.identity.pid,
                            TestbedState(
                                running=False,
                                prefix=self.settings.testbed_prefix,
                                error=f"the controller {self.identity} stopped",
                                backends=[],
                            ),
                            {},
                        )
                        state.resign(session, self.identity.host, self.identity.pid)
                except Exception as exc:
                    log.warning("could not record the controller's stop: %s", str(exc).splitlines()[0])
            self.since = None
            log.warning("controller %s no longer leads: %s", self.identity, why)

    def _adopt_parked(self) -> ControllerExtension | None:
        """The kept testbed, when no other controller led since it was kept (else it is stopped)."""
        parked, self.parked = self.parked, None
        if parked is None:
            return None
        try:
            with self.sessions() as session:
                last = state.leader(session)
        except Exception as exc:  # cannot tell: a fresh testbed is the safe side
            last, other = None, f"the last leader unknown ({str(exc).splitlines()[0]})"
        else:
            other = (
                ""
                if last is None or (last.host, last.pid) == (self.identity.host, self.identity.pid)
                else f"{last.host}:{last.pid} led meanwhile"
            )
        if other or not self.settings.testbed:
            log.warning("controller %s: not keeping the testbed: %s", self.identity, other or "TESTBED=false")
            parked.stop()
            return None
        log.info("controller %s leads again: keeping the testbed (data planes not restarted)", self.identity)
        return parked

    def _drop_parked(self, why: str = "another controller holds the lease") -> None:
        with self._lock:
            parked, self.parked = self.parked, None
            if parked is not None:
                log.warning("controller %s: stopping the kept testbed: %s", self.identity, why)
                parked.stop()

    # ---- every beat ---------------------------------------------------------------------

    def _testbed_state(self) -> tuple[TestbedState, dict[int, float]]:
        prefix = self.settings.testbed_prefix
        if not self.settings.testbed:
            return TestbedState(
                running=False, prefix=prefix, backends=[], error="the controller runs without one (TESTBED=false)"
            ), {}
        if self._testbed_factory is None:
            return TestbedState(
                running=False,
                prefix=prefix,
                backends=[],
                error="the testbed package (sliceportal-testbed) is not installed",
            ), {}
        testbed = self.testbed
        if testbed is None:
            since = self._starting_since.isoformat(timespec="seconds") if self._starting_since else "?"
            return TestbedState(
                running=False,
                prefix=prefix,
                backends=[],
                error=f"the controller {self.identity} is starting it (since {since})",
            ), {}
        return testbed.state(), testbed.base_pps()

    def _beat_step(self) -> None:
        since = self.since
        if since is None:
            return
        loops = state.loop_records()
        with self.sessions() as session:
            state.beat(session, self.identity.host, self.identity.pid, since, self.period_s, loops)
            self._apply_commands(session)
            tb_state, base_pps = self._testbed_state()
            state.report_testbed(session, self.identity.host, self.identity.pid, tb_state, base_pps)

    def _apply_commands(self, session: Session) -> None:
        """Apply what the API recorded; the verdicts commit with this beat's testbed report."""
        testbed = self.testbed
        if testbed is None:
            return  # starting: applied once it runs (a scenario already over is dropped then)
        for cmd in state.pending_commands(session):
            error = ""
            if cmd.kind == END:
                if testbed.end_congestion(cmd.backend_id):
                    log.info("testbed: congestion on backend %d ended early (by %s)", cmd.backend_id, cmd.actor)
            elif cmd.until <= datetime.now(UTC):
                error = "expired: over before the testbed could apply it"
            else:
                try:
                    testbed.congest_until(cmd.backend_id, cmd.until, cmd.factor)
                    log.info(
                        "testbed: congestion x%g on backend %d until %s (by %s)",
                        cmd.factor,
                        cmd.backend_id,
                        cmd.until.isoformat(timespec="seconds"),
                        cmd.actor,
                    )
                except KeyError:
                    error = f"unknown: backend {cmd.backend_id} is not part of the testbed"
                except BackendDown as exc:
                    error = f"down: {exc}"
                except RuntimeError as exc:  # ScenarioRefused (no mechanism to lower on that plane) or another refusal
                    error = f"refused: {exc}"
            state.mark_applied(session, cmd.id, error)
