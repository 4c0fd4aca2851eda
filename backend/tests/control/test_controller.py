"""The controller process: one leader among controllers in separate processes, a takeover
within one lease period when the leader is killed, and what the API shows of it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.control import state
from sliceportal.control.controller import Controller
from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.models import Role
from tests.factories import login, make_user, wait_until

PERIOD_S = 1.0
# beyond the period: a Python process's connect, the first beat's writes, on a loaded machine
SLACK_S = 1.5


def _leader(db_url: str) -> state.Leader | None:
    with session_factory(db_url)() as s:
        return state.leader(s)


@pytest.fixture
def spawn(db_url: str, tmp_path: Path) -> Iterator[Callable[[], subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    env = {
        **os.environ,
        "DATABASE_URL": db_url,
        "DATA_DIR": str(tmp_path),
        "TESTBED": "false",
        "RECONCILE_INTERVAL_S": "1",
        "CONTROLLER_PERIOD_S": str(PERIOD_S),
    }
    env.pop("SLICEPORTAL_DATABASE_URL_RESOLVED", None)

    def start() -> subprocess.Popen[bytes]:
        p = subprocess.Popen(
            [sys.executable, "-c", "from sliceportal.cli import main; main()", "controller"],
            env=env,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        procs.append(p)
        return p

    yield start
    for p in procs:
        if p.poll() is None:
            p.terminate()
    for p in procs:
        try:
            p.wait(timeout=20)
        except subprocess.TimeoutExpired:
            p.kill()
            p.wait()


def test_killed_leader_process_is_replaced_within_one_period(
    db_url: str, spawn: Callable[[], subprocess.Popen[bytes]]
) -> None:
    a, b = spawn(), spawn()
    # two interpreters importing, on a busy machine
    first = wait_until("a controller to lead", lambda: _leader(db_url), 120, 0.05)
    assert isinstance(first, state.Leader) and first.pid in (a.pid, b.pid)
    # the leader's reconciler runs: its loops are in the heartbeat
    wait_until(
        "the leader's reconciler to succeed",
        lambda: any(lp["name"] == "reconciler" and lp["last_success"] for lp in (_leader(db_url) or first).loops),
        10,
        0.05,
    )
    leader, follower = (a, b) if first.pid == a.pid else (b, a)
    assert follower.stdout is not None
    assert b"competing for the lease" in follower.stdout.readline()  # started (imports take seconds here)
    time.sleep(2 * PERIOD_S)  # and has tried at least once since
    again = _leader(db_url)
    assert again is not None and again.pid == leader.pid and again.since == first.since  # no flapping
    os.kill(leader.pid, signal.SIGKILL)
    leader.wait()
    killed = time.monotonic()

    def successor() -> state.Leader | None:
        hb = _leader(db_url)
        return hb if hb is not None and hb.pid == follower.pid else None

    hb = wait_until("the other controller to lead", successor, PERIOD_S + SLACK_S + 5, 0.05)
    took = time.monotonic() - killed
    assert took <= PERIOD_S + SLACK_S, f"took over after {took:.2f} s (period {PERIOD_S} s)"
    assert isinstance(hb, state.Leader) and hb.since > first.since

    # and it reconciles: its reconciler succeeds after the takeover
    def reconciled() -> bool:
        cur = _leader(db_url)
        return cur is not None and any(
            lp["name"] == "reconciler" and lp["last_success"] and datetime.fromisoformat(lp["last_success"]) >= hb.since
            for lp in cur.loops
        )

    wait_until("the successor's reconciler to succeed", reconciled, PERIOD_S + SLACK_S + 2, 0.05)


def test_health_and_testbed_routes_show_the_controller(
    client: TestClient, session: Session, db_url: str, settings: Settings
) -> None:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    h = client.get("/api/v1/health/detail", headers=op).json()
    assert h["controller"] is None and h["status"] == "degraded"  # nobody runs the loops
    r = client.get("/api/v1/testbed", headers=op)
    assert r.status_code == 409 and "no controller has ever reported" in r.json()["detail"]
    ctl = Controller(settings.model_copy(update={"reconcile_interval_s": 1.0}), db_url, period_s=PERIOD_S)
    with ctl:
        assert ctl.wait_ready(10)
        h = client.get("/api/v1/health/detail", headers=op).json()
        assert h["controller"]["pid"] == os.getpid() and h["controller"]["alive"]
        assert {"reconciler", "health-probes", "controller-beat"} <= {lp["name"] for lp in h["loops"]}
        r = client.get("/api/v1/testbed", headers=op)
        assert r.status_code == 409 and "TESTBED=false" in r.json()["detail"]
        c = client.post("/api/v1/testbed/congestion", json={"backend_id": 1, "duration_s": 10}, headers=op)
        assert c.status_code == 409, c.text
    # stopped on purpose: it said so, and no longer leads
    h = client.get("/api/v1/health/detail", headers=op).json()
    assert h["controller"] is None
    r = client.get("/api/v1/testbed", headers=op)
    assert r.status_code == 409 and "stopped" in r.json()["detail"]
