"""A controller whose lease goes with its database session keeps the live testbed (data planes
and their rules) and adopts it when it leads again (issue #26: a database blip restarted every
data plane empty); when another controller is seen holding the lease meanwhile, the kept
testbed is stopped at once (namespaces and processes gone) and the next term starts a new one."""

from __future__ import annotations

import subprocess

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.control.leader import LeaderLease
from sliceportal.models import Role
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal_testbed.netns_testbed import namespaces
from sliceportal_testbed.processes import leftovers
from tests.factories import live_testbed_settings, login, make_user, running_controller, wait_until

pytestmark = pytest.mark.needs_root

PERIOD_S = 1.0


def _netns() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def _terminate_lease_session(db_url: str, pid: int | None) -> None:
    admin = create_engine(db_url)
    with admin.connect() as conn:  # the lease's database session ends: the lock is gone
        assert conn.scalar(text("SELECT pg_terminate_backend(:p)"), {"p": pid})
    admin.dispose()


def test_lost_lease_keeps_the_testbed_unless_another_leads(db_url: str, session: Session) -> None:
    seed_demo(session, users_per_slice=2)
    make_user(session, "op", Role.OPERATOR)
    settings = live_testbed_settings("l", 300)
    prefix = settings.testbed_prefix
    with (
        TestClient(create_app(settings, db_url)) as client,
        running_controller(settings, db_url, period_s=PERIOD_S) as controller,
    ):
        op = login(client, "op")
        assert client.get("/api/v1/testbed", headers=op).json()["running"]
        assert set(namespaces(prefix)) <= _netns()
        first = controller.testbed
        assert first is not None and controller.testbed_starts == 1
        pids = {p.name: p.process.proc.pid for p in first.planes if p.process and p.process.proc}
        assert pids
        terms = controller.lease.terms
        _terminate_lease_session(db_url, controller.lease.backend_pid)
        # nobody else competes: it leads again within a period or two, with the same testbed
        wait_until("the controller to lead again", lambda: controller.lease.terms > terms and controller.leading, 10)
        assert controller.wait_ready(30)
        assert controller.testbed is first and controller.testbed_starts == 1 and first.running
        assert {p.name: p.process.proc.pid for p in first.planes if p.process and p.process.proc} == pids
        assert set(namespaces(prefix)) <= _netns()
        wait_until(
            "the API to show the testbed", lambda: client.get("/api/v1/testbed", headers=op).json().get("running"), 5
        )

        # now another candidate takes the lease while this one is away: the kept testbed goes
        other = LeaderLease(db_url, 0.1, name="other-candidate")
        _terminate_lease_session(db_url, controller.lease.backend_pid)
        other.start()
        try:
            wait_until("the other candidate to lead", lambda: other.leading, 10)
            # the namespaces go before the testbed says it stopped: wait for the whole teardown
            wait_until(
                "the kept testbed torn down",
                lambda: (
                    controller.parked is None
                    and controller.testbed is None
                    and not set(namespaces(prefix)) & _netns()
                    and not first.running
                    and leftovers(prefix) == []
                ),
                30,
            )
        finally:
            other.stop()
        # and it leads again once the other is gone: a new testbed, reported running
        assert controller.wait_ready(300)
        assert controller.testbed is not None and controller.testbed is not first and controller.testbed.running
        assert controller.testbed_starts == 2
        wait_until(
            "the API to show the new testbed",
            lambda: client.get("/api/v1/testbed", headers=op).json().get("running"),
            5,
        )
    assert not set(namespaces(prefix)) & _netns()
    assert leftovers(prefix) == []
