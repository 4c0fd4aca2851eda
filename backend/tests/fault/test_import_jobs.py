"""CSV imports are jobs (issue #26 item 1): an import is not tied to the life of the API worker
that took the request. A real uvicorn worker process is SIGKILLed mid-import; the leading
controller imports the stored upload again, as the same user, exactly once."""

from __future__ import annotations

import os
import signal
import subprocess
import threading
from typing import Any

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import create_engine, func, select, text
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.models import ImportJob, Subscriber
from sliceportal.services import jobs
from tests.factories import (
    add_slice,
    add_tenant,
    integrator_key,
    running_controller,
    tenant_body,
    wait_until,
)

ROWS = 10_000
HEADER = "imsi,ue_ip,teids,tenant,slices\n"


def _csv(n: int) -> bytes:
    return (
        HEADER + "".join(f"{1010000000000 + i:015d},10.45.{i // 250}.{i % 250 + 1},{i + 1},red,iot\n" for i in range(n))
    ).encode()


@pytest.fixture
def op(op: dict[str, str], client: TestClient) -> dict[str, str]:
    """The operator, and tenant red's Best Effort slice iot to import into."""
    add_slice(client, op, add_tenant(client, op, "red", 5001, 1), "iot", "Best Effort")
    return op


def _job(db_url: str) -> ImportJob | None:
    with session_factory(db_url)() as s:
        job = s.scalar(select(ImportJob).order_by(ImportJob.id.desc()).limit(1))
        if job is not None:
            s.expunge(job)
        return job


def _count(db_url: str) -> int:
    with session_factory(db_url)() as s:
        return s.scalar(select(func.count()).select_from(Subscriber)) or 0


def _audit(db_url: str) -> list[tuple[str, dict[str, Any]]]:
    with session_factory(db_url)() as s:
        rows = s.execute(text("SELECT actor, after FROM audit_log WHERE action = 'import'"))
        return [(r.actor, r.after) for r in rows]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_worker_killed_mid_import_leaves_a_job_the_controller_finishes(
    client: TestClient,
    op: dict[str, str],
    db_url: str,
    settings: Settings,
    monkeypatch: pytest.MonkeyPatch,
    worker: tuple[subprocess.Popen[bytes], str],
) -> None:
    # the controller runs in this process: stale after 3 s (10 in production); the worker beats every second
    monkeypatch.setattr(jobs, "STALE_S", 3.0)
    proc, base = worker
    answers: list[int] = []

    def request() -> None:  # the request: a plain import through the worker
        try:
            r = httpx.post(
                f"{base}/api/v1/subscribers/import",
                headers=op,
                timeout=60,
                files={"file": ("subs.csv", _csv(ROWS), "text/csv")},
            )
            answers.append(r.status_code)
        except httpx.HTTPError:
            pass  # the worker dies under it

    # Holding the subscriber table (reads pass, writes wait) stops the import right before its
    # insert, deterministically: every row staged and checked, nothing written yet.
    blocker = create_engine(db_url).connect()
    try:
        blocker.execute(text("LOCK TABLE subscriber IN EXCLUSIVE MODE"))
        threading.Thread(target=request, name="import-request", daemon=True).start()

        def held_mid_import() -> ImportJob | None:
            job = _job(db_url)
            if job is None or job.heartbeat_at is None or job.heartbeat_at <= job.created_at:
                return None  # not yet renewed by its heartbeat thread
            with session_factory(db_url)() as s:  # not the blocker's: a transaction sees one stats snapshot
                waiting = s.scalar(
                    text(
                        "SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' "
                        "AND query LIKE '%INSERT INTO subscriber %'"
                    )
                )
            return job if waiting else None

        running = wait_until("the import waits to insert while its job beats", held_mid_import, 30, poll_s=0.05)
        assert running.status == "running" and running.runner.endswith(f":{proc.pid}"), running.runner
        assert running.actor == "op" and running.resumed_by == "" and len(running.csv) == len(_csv(ROWS))
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
    finally:
        blocker.rollback()
        blocker.close()
    assert answers == []
    # the dead worker's transaction is rolled back by PostgreSQL: a running job, nothing imported
    assert _count(db_url) == 0
    job = _job(db_url)
    assert job is not None and job.status == "running"

    with running_controller(settings, db_url, period_s=1.0):
        wait_until("the controller finishes the import", lambda: (j := _job(db_url)) and j.status != "running", 45)
    done = _job(db_url)
    assert done is not None and done.id == running.id
    assert done.status == "succeeded" and done.error == "", done.error
    assert done.resumed_by and done.resumed_by != done.runner, (done.resumed_by, done.runner)
    assert done.report is not None and done.report["imported"] == ROWS and done.finished_at is not None
    assert _count(db_url) == ROWS
    audit = _audit(db_url)
    assert len(audit) == 1, audit  # imported once, said once: by whom, which job, who resumed it
    actor, after = audit[0]
    assert actor == "op" and after == {"rows": ROWS, "job": done.id, "resumed_by": done.resumed_by}, audit


def test_an_import_is_a_job_ending_with_its_rows_or_its_refusal(
    client: TestClient, op: dict[str, str], db_url: str
) -> None:
    r = client.post("/api/v1/subscribers/import", headers=op, files={"file": ("s.csv", _csv(50), "text/csv")})
    assert r.status_code == 201 and r.json()["imported"] == 50, r.text
    ok = _job(db_url)
    assert ok is not None and ok.status == "succeeded" and ok.report and ok.report["imported"] == 50
    assert ok.runner and ok.resumed_by == "" and ok.actor == "op" and ok.finished_at is not None
    # the same rows again: refused as before, the job failed with the refusal, nothing changed
    again = client.post("/api/v1/subscribers/import", headers=op, files={"file": ("s.csv", _csv(50), "text/csv")})
    assert again.status_code == 422 and again.headers["content-type"] == "application/problem+json", again.text
    failed = _job(db_url)
    assert failed is not None and failed.id != ok.id and failed.status == "failed"
    assert failed.error == again.json()["detail"] and failed.report is None
    bad = client.post("/api/v1/subscribers/import", headers=op, files={"file": ("s.csv", b"\xff\xfe", "text/csv")})
    assert bad.status_code == 422 and "UTF-8" in bad.json()["detail"], bad.text
    not_utf8 = _job(db_url)
    assert not_utf8 is not None and not_utf8.status == "failed" and not_utf8.error == bad.json()["detail"]
    assert _count(db_url) == 50 and len(_audit(db_url)) == 1


def test_respond_async_answers_202_with_the_job_and_it_ends(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    r = client.post(
        "/api/v1/subscribers/import",
        headers={**op, "Prefer": "respond-async"},
        files={"file": ("s.csv", _csv(200), "text/csv")},
    )
    assert r.status_code == 202, r.text
    job = r.json()
    assert r.headers["location"] == f"/api/v1/subscribers/import-jobs/{job['id']}"
    assert job["status"] in ("running", "succeeded") and job["runner"] and job["actor"] == "op", job
    done = wait_until(
        "the import job ends",
        lambda: (j := client.get(r.headers["location"], headers=op).json())["status"] != "running" and j,
        30,
    )
    assert done["status"] == "succeeded" and done["report"]["imported"] == 200 and done["error"] == "", done
    # a refused import: 202 too (the file is read by the job), the job says why
    again = client.post(
        "/api/v1/subscribers/import",
        headers={**op, "Prefer": "respond-async"},
        files={"file": ("s.csv", _csv(200), "text/csv")},
    )
    assert again.status_code == 202, again.text
    failed = wait_until(
        "the refused job ends",
        lambda: (j := client.get(again.headers["location"], headers=op).json())["status"] != "running" and j,
        30,
    )
    assert failed["status"] == "failed" and "nothing was imported" in failed["error"], failed
    assert client.get("/api/v1/subscribers/import-jobs/999999", headers=op).status_code == 404
    # a key bound to another tenant: its own tenant's jobs only
    blue = client.post("/api/v1/tenants", json=tenant_body("blue", 5002, 2), headers=op).json()["id"]
    as_blue = integrator_key(client, session, op, ["read", "write"], blue)
    assert client.get(r.headers["location"], headers=as_blue).status_code == 404
    own = client.post(
        "/api/v1/subscribers/import",
        headers={**as_blue, "Prefer": "respond-async"},
        files={"file": ("s.csv", HEADER.encode() + b"001019999999999,10.9.0.1,,blue,\n", "text/csv")},
    )
    assert own.status_code == 202 and own.json()["tenant_id"] == blue, own.text
    assert client.get(own.headers["location"], headers=as_blue).status_code == 200
