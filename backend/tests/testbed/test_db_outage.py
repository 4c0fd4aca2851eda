"""Issue #26 with the live testbed: a 10 s database outage leaves the data planes running with
their rules (no restart) and the controller leads again within 5 s of the database's return;
a killed data plane's KPIs resume only from an interval that began after its refill was
confirmed."""

from __future__ import annotations

import os
import signal
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta

import pytest
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.core.pgembed import EmbeddedPostgres
from sliceportal.models import Deployment, DeploymentKind, KpiSample
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_testbed.live import Plane
from sliceportal_testbed.processes import leftovers
from tests.factories import live_testbed_settings, running_controller, wait_until

pytestmark = pytest.mark.needs_root

OUTAGE_S = 10.0


@pytest.fixture
def restart_database(pg: EmbeddedPostgres) -> Iterator[EmbeddedPostgres]:
    """The shared test cluster, started again whatever the test did."""
    yield pg
    if not pg.running():
        pg.start()


def _pids(planes: list[Plane]) -> dict[str, tuple[int, int]]:
    return {
        p.name: (p.process.proc.pid, p.process.starts)
        for p in planes
        if p.process is not None and p.process.proc is not None
    }


def test_database_outage_keeps_the_planes_and_a_restarted_plane_measures_after_its_refill(
    db_url: str, session: Session, restart_database: EmbeddedPostgres
) -> None:
    seed_demo(session, users_per_slice=2)
    settings = live_testbed_settings("o", 300, reconcile_interval_s=5)
    prefix = settings.testbed_prefix
    with running_controller(settings, db_url, period_s=1.0) as controller:
        testbed = controller.testbed
        assert testbed is not None and testbed.running
        before = _pids(testbed.planes)
        assert before
        terms = controller.lease.terms

        # the database away for 10 s: the lease goes with it, the testbed stays
        restart_database.stop()
        wait_until("the controller to notice", lambda: not controller.leading, 10)
        stopped = time.monotonic()
        while time.monotonic() - stopped < OUTAGE_S:  # the outage's length is the point here
            assert _pids(testbed.planes) == before  # no data plane stopped or restarted meanwhile
            time.sleep(0.5)
        restart_database.start()
        back, back_at = time.monotonic(), datetime.now(UTC)
        assert controller.wait_ready(15)
        took = time.monotonic() - back
        assert took < 5.0, f"led again {took:.1f} s after the database answered"
        assert controller.lease.terms == terms + 1
        assert controller.testbed is testbed and controller.testbed_starts == 1
        assert _pids(testbed.planes) == before

        session.rollback()
        session.get_bind().dispose()  # the test's own pooled connections died with the server

        def measured_again() -> bool:
            session.expire_all()
            return bool(session.scalar(select(func.count()).select_from(KpiSample).where(KpiSample.ts > back_at)))

        wait_until("KPIs written again", measured_again, 10)

        # a killed plane: its KPIs come back only from an interval begun after its confirmed refill
        plane = next(p for p in testbed.planes if p.driver == "netfpga")
        assert plane.process is not None and plane.process.proc is not None
        session.expire_all()
        last_dep = session.scalar(select(func.max(Deployment.id))) or 0
        killed_at = datetime.now(UTC)
        os.kill(plane.process.proc.pid, signal.SIGKILL)
        wait_until(
            f"{plane.name} restarted and refilled",
            lambda: plane.up and not plane.restore_due and plane.refilled_at > 0,
            30,
        )

        def refill() -> Deployment | None:
            session.expire_all()
            return session.scalar(
                select(Deployment)
                .where(
                    Deployment.backend_id == plane.backend_id,
                    Deployment.kind == DeploymentKind.RECONCILE,
                    Deployment.id > last_dep,
                )
                .order_by(Deployment.id.desc())
                .limit(1)
            )

        rec = wait_until("the refill's record", refill, 10)
        assert rec.finished_at is not None and rec.diff["found"] == "restarted_empty", rec.diff

        # an interval that ended just after the kill holds traffic from before it: look from two
        # intervals on (the watchdog notices a dead process within 0.5 s)
        after_kill = killed_at + timedelta(seconds=2 * testbed.interval_s)

        def samples() -> list[datetime]:
            session.expire_all()
            return list(
                session.scalars(
                    select(KpiSample.ts)
                    .where(KpiSample.backend_id == plane.backend_id, KpiSample.ts > after_kill)
                    .order_by(KpiSample.ts)
                )
            )

        first = wait_until(f"KPIs of the restarted {plane.name}", samples, 15)[0]
        # stamped where its interval (1 s) ends: it began after the refill was recorded
        assert first - timedelta(seconds=testbed.interval_s * 0.9) >= rec.finished_at, (
            killed_at,
            first,
            rec.finished_at,
        )
    assert leftovers(prefix) == []
