"""A controller that loses its lease stops the live testbed at once (namespaces and data-plane
processes gone) and starts it again when it leads again; the API reports each step."""

from __future__ import annotations

import os
import subprocess
import time

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, text
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import Role
from sliceportal.services.bootstrap_data import seed_demo
from sliceportal.testbed.netns_testbed import namespaces
from sliceportal.testbed.processes import leftovers
from tests.factories import login, make_user, running_controller, wait_until

pytestmark = pytest.mark.needs_root

PERIOD_S = 1.0


def _netns() -> set[str]:
    return set(subprocess.run(["ip", "netns", "list"], capture_output=True, text=True).stdout.split())


def test_lost_lease_stops_the_testbed_and_the_next_term_starts_it(db_url: str, session: Session) -> None:
    seed_demo(session, users_per_slice=2)
    make_user(session, "op", Role.OPERATOR)
    prefix = f"l{os.getpid() % 10000}-"
    settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, testbed=True, testbed_rate_pps=300,
                        testbed_prefix=prefix)
    with TestClient(create_app(settings, db_url)) as client, \
            running_controller(settings, db_url, period_s=PERIOD_S) as controller:
        op = login(client, "op")
        assert client.get("/api/v1/testbed", headers=op).json()["running"]
        assert set(namespaces(prefix)) <= _netns()
        first = controller.testbed
        admin = create_engine(db_url)
        with admin.connect() as conn:  # the lease's database session ends: the lock is gone
            assert conn.scalar(text("SELECT pg_terminate_backend(:p)"), {"p": controller.lease.backend_pid})
        admin.dispose()
        # the duties stop at once: the testbed's teardown itself takes a few seconds
        wait_until("the testbed torn down", lambda: controller.testbed is None and not
                   set(namespaces(prefix)) & _netns(), 20)
        assert first is not None and not first.running and leftovers(prefix) == []
        # and it leads again (nobody else competes): a new testbed, reported running
        started = time.monotonic()
        assert controller.wait_ready(300)
        assert controller.testbed is not None and controller.testbed is not first and controller.testbed.running
        wait_until("the API to show the new testbed", lambda: client.get("/api/v1/testbed", headers=op).json()
                   .get("running"), 5)
        assert time.monotonic() - started < 300
    assert not set(namespaces(prefix)) & _netns()
    assert leftovers(prefix) == []
