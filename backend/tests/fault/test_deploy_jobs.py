"""Deploys are jobs (issue #26 item 1): a push is not tied to the life of the API worker that
took the request. A real uvicorn worker process is SIGKILLed mid-push; the leading controller
finishes the job. ``Prefer: respond-async`` answers 202 with the job's row at once."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from datetime import timedelta
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select, text, update
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.models import Backend, Deployment, DeploymentKind
from sliceportal.services import deployments as svc
from sliceportal.services import jobs
from sliceportal_testbed.processes import RunningTarget
from tests.factories import running_controller, wait_until
from tests.fault.test_control_loop import EIGHT_QUEUES, _setup

# the same app factory under uvicorn, alone in its own process, on the test's database
USERS = 300  # 1 200 P4 entries that do not aggregate
BATCH = 4  # P4Runtime updates a write: the push takes a few hundred steps, each reported


@pytest.fixture
def stale_after_3s(monkeypatch: pytest.MonkeyPatch) -> None:
    # the controller runs in this process: its job duty calls a heartbeat stale after 3 s (10 in
    # production) so that the test stays short; the worker still beats every second
    monkeypatch.setattr(jobs, "STALE_S", 3.0)


def _audit_rows(db_url: str, dep_id: int) -> list[dict[str, Any]]:
    with session_factory(db_url)() as s:
        rows = (
            s.execute(
                text(
                    "SELECT after FROM audit_log WHERE action IN ('deploy', 'rollback') "
                    "AND (after->>'deployment')::bigint = :d"
                ),
                {"d": dep_id},
            )
            .scalars()
            .all()
        )
    return list(rows)


@pytest.mark.slow
@pytest.mark.timeout(180)
def test_a_worker_killed_mid_push_leaves_a_job_the_controller_finishes(
    client: TestClient,
    op: dict[str, str],
    session: Session,
    db_url: str,
    settings: Settings,
    stale_after_3s: None,
    worker: tuple[subprocess.Popen[bytes], str],
    start_target: Callable[..., RunningTarget],
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, _ = _setup(client, op, target.address, users=USERS)
    session.execute(
        update(Backend).where(Backend.id == bid).values(options={"address": target.address, "batch_size": BATCH})
    )
    session.commit()
    proc, base = worker
    switch = target.proc.pid  # type: ignore[attr-defined]  # the bundled target's process
    events: list[dict[str, Any]] = []

    def request() -> None:  # the request: a plain deploy through the worker, progress streamed
        try:
            with (
                httpx.Client(base_url=base, headers=op, timeout=120) as api,
                api.stream(
                    "POST", f"/api/v1/backends/{bid}/deployments", headers={"Accept": "application/x-ndjson"}
                ) as r,
            ):
                for line in r.iter_lines():
                    if line:
                        events.append(json.loads(line))
        except httpx.HTTPError:
            pass  # the worker dies under it

    def job() -> dict[str, Any]:
        return client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["data"][0]  # type: ignore[no-any-return]

    with running_controller(settings, db_url, period_s=1.0):
        threading.Thread(target=request, name="deploy-request", daemon=True).start()
        wait_until(
            "the push writes", lambda: any(e.get("phase") == "write" and e.get("done") for e in events), 60, poll_s=0.02
        )
        os.kill(switch, signal.SIGSTOP)  # the switch holds the push where it is: mid-way, deterministically
        try:
            # read through another process while it runs: a job with its runner, heartbeat and progress
            running = wait_until(
                "the job's heartbeat carries its progress",
                lambda: r if (r := job())["progress"] and r["progress"]["phase"] == "write" else None,
                20,
            )
            assert running["status"] == "running" and running["runner"].endswith(f":{proc.pid}"), running
            assert 0 < running["progress"]["done"] < running["progress"]["total"], running
            os.kill(proc.pid, signal.SIGKILL)
            proc.wait(timeout=10)
        finally:
            os.kill(switch, signal.SIGCONT)
        assert not [e for e in events if e.get("event") in ("result", "error")], events[-1]
        # uvicorn starts a new worker at once: its start-up must leave the job to the controller
        with TestClient(create_app(settings, db_url)):
            pass

        def finished() -> bool:
            r = client.get(f"/api/v1/backends/{bid}/deployments/{running['id']}", headers=op)
            return r.status_code == 200 and r.json()["status"] != "running"

        wait_until("the controller finishes the job", finished, 45)
    done = client.get(f"/api/v1/backends/{bid}/deployments/{running['id']}", headers=op).json()
    assert done["status"] == "succeeded" and done["error"] == "", done
    assert done["resumed_by"] and done["resumed_by"] != done["runner"], done
    assert done["kind"] == "deploy" and done["finished_at"] is not None
    # the data plane holds exactly the job's rule set: a read-back finds nothing to repair
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    assert rec["in_sync"] is True, rec
    with session_factory(db_url)() as s:
        in_force = svc.current_rule_set(s, bid)
        assert in_force is not None and in_force.id == done["rule_set_id"]
        assert rec["found_version"] == in_force.digest
        kinds = list(s.scalars(select(Deployment.kind).where(Deployment.backend_id == bid)))
    assert kinds == [DeploymentKind.DEPLOY], kinds  # one job, no repair, no second deploy
    audit = _audit_rows(db_url, running["id"])
    assert len(audit) == 1 and audit[0]["status"] == "succeeded", audit


def test_respond_async_answers_202_with_the_job_and_it_runs_to_its_end(
    client: TestClient, op: dict[str, str], db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, _ = _setup(client, op, target.address, users=40)
    r = client.post(f"/api/v1/backends/{bid}/deployments", headers={**op, "Prefer": "respond-async"})
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/api/v1/backends/{bid}/deployments/{job['id']}"
    assert job["status"] in ("running", "succeeded") and job["runner"] and job["heartbeat_at"], job

    def finished() -> bool:
        return client.get(r.headers["location"], headers=op).json()["status"] != "running"

    wait_until("the job ends", finished, 30)
    done = client.get(r.headers["location"], headers=op).json()
    assert done["status"] == "succeeded" and done["resumed_by"] == "", done
    assert len(_audit_rows(db_url, job["id"])) == 1
    # the same request again: nothing to push, answered at once as without the header
    again = client.post(f"/api/v1/backends/{bid}/deployments", headers={**op, "Prefer": "respond-async"})
    assert again.status_code == 200 and again.json()["status"] == "unchanged", again.text
    # a refusal is the same answer as without the header: nothing started
    bad = client.post(
        f"/api/v1/backends/{bid}/rollback", json={"rule_set": 7}, headers={**op, "Prefer": "respond-async"}
    )
    assert bad.status_code == 404 and bad.headers["content-type"] == "application/problem+json", bad.text
    rolled = client.post(
        f"/api/v1/backends/{bid}/rollback", json={"rule_set": 1}, headers={**op, "Prefer": "wait=5, respond-async"}
    )
    assert rolled.status_code == 202 and rolled.json()["kind"] == "rollback", rolled.text
    wait_until(
        "the rollback ends",
        lambda: client.get(rolled.headers["location"], headers=op).json()["status"] != "running",
        30,
    )
    # another backend's path does not name this job
    assert client.get(f"/api/v1/backends/{bid + 1}/deployments/{job['id']}", headers=op).status_code == 404


def test_a_job_left_by_a_worker_that_lost_the_lock_is_busy_while_it_beats_then_resumed(
    client: TestClient, op: dict[str, str], db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    """Under the backend's lock, a ``running`` job with a fresh heartbeat belongs to a live runner
    that lost the database for a moment: busy. Once its heartbeat is stale, whoever takes the
    lock (here a manual reconcile) finishes the job first."""
    target = start_target(*EIGHT_QUEUES)
    bid, sid = _setup(client, op, target.address, users=8)
    first = client.post(f"/api/v1/backends/{bid}/deployments", headers=op).json()
    svc0 = client.get(f"/api/v1/slices/{sid}", headers=op).json()["services"][0]
    r = client.patch(
        f"/api/v1/slices/{sid}/services/{svc0['id']}",
        json={"dst_ports": [{"lo": 7001, "hi": 7001}], "version": svc0["version"]},
        headers=op,
    )
    assert r.status_code == 200, r.text
    second = client.post(f"/api/v1/backends/{bid}/deployments", headers=op).json()
    assert first["status"] == second["status"] == "succeeded"
    # a rollback to the first rule set, as a worker that lost the database (and its lock) leaves it
    with session_factory(db_url)() as s:
        dep = Deployment(
            backend_id=bid,
            rule_set_id=first["rule_set_id"],
            previous_rule_set_id=second["rule_set_id"],
            kind=DeploymentKind.ROLLBACK,
            actor="op",
            runner="elsewhere:1",
            diff={},
            heartbeat_at=func.clock_timestamp(),
        )
        s.add(dep)
        s.commit()
        dep_id = dep.id
    busy = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op)
    assert busy.status_code == 409 and busy.headers["retry-after"], busy.text
    assert client.get(f"/api/v1/backends/{bid}/deployments/{dep_id}", headers=op).json()["status"] == "running"
    with session_factory(db_url)() as s:  # its runner stops beating
        s.execute(
            update(Deployment)
            .where(Deployment.id == dep_id)
            .values(heartbeat_at=func.clock_timestamp() - timedelta(seconds=jobs.STALE_S + 1))
        )
        s.commit()
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op)
    assert rec.status_code == 200 and rec.json()["in_sync"] is True, rec.text
    done = client.get(f"/api/v1/backends/{bid}/deployments/{dep_id}", headers=op).json()
    assert done["status"] == "succeeded" and done["resumed_by"] and done["runner"] == "elsewhere:1", done
    with session_factory(db_url)() as s:
        in_force = svc.current_rule_set(s, bid)
    assert in_force is not None and in_force.id == first["rule_set_id"] == done["rule_set_id"]
    assert rec.json()["found_version"] == in_force.digest
    assert len(_audit_rows(db_url, dep_id)) == 1
