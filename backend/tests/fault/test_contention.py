"""Issue #26 on real PostgreSQL and the bundled P4Runtime target: health with hysteresis (a data
plane frozen with SIGSTOP for less than the threshold stays up; longer, it is down, named
why; a deploy re-probes a backend in doubt before refusing) and the reconcile record that
says what the data plane held (an API worker killed mid-push vs. a restart vs. drift)."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.models import Backend, Deployment, DeploymentStatus
from sliceportal.rules.ir import RuleIR
from sliceportal.services import deployments as svc
from sliceportal.services.backends import POOL
from sliceportal.services.health_probe import HealthProber
from sliceportal_testbed.processes import RunningTarget, free_port
from tests.factories import wait_until
from tests.fault.test_control_loop import EIGHT_QUEUES, _move_service, _setup

TIMEOUT_S, DOWN_AFTER = 2.0, 3  # the prober's policy here: down after 3 x 2 s without an answer


@pytest.fixture
def prober(db_url: str, settings: Settings) -> Iterator[HealthProber]:
    """The controller's probe loop itself, with a short policy."""
    p = HealthProber(
        session_factory(db_url),
        settings=settings.model_copy(update={"health_probe_timeout_s": TIMEOUT_S, "health_down_after": DOWN_AFTER}),
    )
    p.start()
    yield p
    p.stop()


def _health(session: Session, bid: int) -> tuple[str, str]:
    session.expire_all()
    b = session.get_one(Backend, bid)
    return b.health, b.health_detail


def _observed(session: Session, bid: int, seconds: float) -> set[tuple[str, str]]:
    """Every (health, detail) the backend had over the next ``seconds``, read every 0.1 s:
    observing for the whole period, not waiting for a condition."""
    until = time.monotonic() + seconds
    seen = set()
    while time.monotonic() < until:
        seen.add(_health(session, bid))
        time.sleep(0.1)
    return seen


def _healthy_plane(
    client: TestClient, op: dict[str, str], session: Session, start_target: Callable[..., RunningTarget]
) -> tuple[int, int]:
    """A P4 plane behind a backend of 4 subscribers, probed ok: (its process id, the backend's id)."""
    target = start_target(*EIGHT_QUEUES)
    bid, _ = _setup(client, op, target.address, users=4)
    wait_until("health ok", lambda: _health(session, bid)[0] == "ok", 10)
    return target.proc.pid, bid


def test_a_frozen_data_plane_is_degraded_then_down_and_a_deploy_reprobes(
    client: TestClient,
    op: dict[str, str],
    session: Session,
    prober: HealthProber,
    start_target: Callable[..., RunningTarget],
) -> None:
    pid, bid = _healthy_plane(client, op, session, start_target)

    # frozen for less than the threshold (the first miss counts after 2 s, down after 6 s)
    os.kill(pid, signal.SIGSTOP)
    try:
        seen = {h for h, _ in _observed(session, bid, 3.0)}  # for the whole freeze
    finally:
        os.kill(pid, signal.SIGCONT)
    assert "down" not in seen, seen
    wait_until("health ok after SIGCONT", lambda: _health(session, bid)[0] == "ok", 10)

    # frozen for longer: degraded at the first miss, down after three, the reason named
    os.kill(pid, signal.SIGSTOP)
    try:
        stopped = time.monotonic()
        wait_until("degraded", lambda: _health(session, bid)[0] == "degraded", 2 * TIMEOUT_S + 3)
        wait_until("down", lambda: _health(session, bid)[0] == "down", DOWN_AFTER * TIMEOUT_S + 5)
        assert time.monotonic() - stopped >= (DOWN_AFTER - 1) * TIMEOUT_S
        detail = _health(session, bid)[1]
        assert f"{DOWN_AFTER} failed probes in a row" in detail and f"within {TIMEOUT_S:g} s" in detail, detail
        # a deploy to it probes again before refusing, and still refuses: nothing recorded
        before = client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()
        r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
        assert r.status_code == 503, r.text
        assert client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json() == before
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until("health ok after SIGCONT", lambda: _health(session, bid)[0] == "ok", 15)

    # a stale "down" of a live plane (the probes' verdict is seconds old): the deploy asks
    # again and goes ahead instead of answering 503 "is down"
    prober.stop()
    session.execute(update(Backend).where(Backend.id == bid).values(health="down", health_detail="stale verdict"))
    session.commit()
    r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert r.status_code == 201 and r.json()["status"] == "succeeded", r.text
    assert _health(session, bid)[0] == "ok"


def test_a_probe_waits_behind_a_read_back_but_not_behind_a_push(
    client: TestClient,
    op: dict[str, str],
    session: Session,
    prober: HealthProber,
    start_target: Callable[..., RunningTarget],
) -> None:
    """A read of the data plane that hangs (a reconcile or a counters read reconnecting to a dead
    plane) is the plane's silence: the probe waits behind it and counts. A push holding the driver
    as long is not (it reports on the plane itself): CI saw a dead plane stay ``degraded`` for 15 s
    while every probe found the driver busy with a read and counted nothing."""
    _, bid = _healthy_plane(client, op, session, start_target)
    backend = session.get_one(Backend, bid)

    with POOL.use(session, backend):  # as a push holds it, longer than down_after x timeout
        seen = {h for h, _ in _observed(session, bid, DOWN_AFTER * TIMEOUT_S + 1)}  # for the whole hold
    assert seen == {"ok"}, seen

    with POOL.use(session, backend, read_back=True):  # as a read-back hung on the data plane
        stopped = time.monotonic()
        wait_until("down", lambda: _health(session, bid)[0] == "down", DOWN_AFTER * TIMEOUT_S + 5)
        assert time.monotonic() - stopped >= (DOWN_AFTER - 1) * TIMEOUT_S
    wait_until("health ok once the read is done", lambda: _health(session, bid)[0] == "ok", 10)


def _hold_the_gil(seconds: float) -> None:
    """Stall this whole process as a host at load 40 does: no other thread runs meanwhile
    (the GIL is handed over only at the switch interval, set far beyond ``seconds``)."""
    old = sys.getswitchinterval()
    sys.setswitchinterval(60.0)
    try:
        end = time.monotonic() + seconds
        while time.monotonic() < end:
            pass
    finally:
        sys.setswitchinterval(old)


def test_a_stall_of_the_controller_itself_is_not_the_data_planes_silence(
    client: TestClient,
    op: dict[str, str],
    session: Session,
    prober: HealthProber,
    start_target: Callable[..., RunningTarget],
) -> None:
    """A probe's time is the time the prober's process could have read an answer in. CI saw a
    live NetFPGA model declared down at load 40 while it answered register reads within 0.2 s:
    the answers waited for the controller's own threads. Here a plane is silent for less than
    a probe's time, plus a stall of the prober's own process (the GIL held) that makes the wall
    clock pass the timeout: the old count turned it ``degraded``."""
    pid, bid = _healthy_plane(client, op, session, start_target)

    os.kill(pid, signal.SIGSTOP)
    frozen = time.monotonic()
    try:
        wait_until(
            "a probe in flight to the frozen plane",
            lambda: bid in prober._inflight and prober._inflight[bid].started > frozen,
            10,
        )
        _hold_the_gil(TIMEOUT_S + 1.0)
        seen = _observed(session, bid, 0.5)  # the prober's verdict on that window
    finally:
        os.kill(pid, signal.SIGCONT)
    assert {h for h, _ in seen} == {"ok"}, seen
    # the plane's real silence still counts, the stall left out of it
    os.kill(pid, signal.SIGSTOP)
    try:
        wait_until("degraded", lambda: _health(session, bid)[0] == "degraded", 2 * TIMEOUT_S + 3)
    finally:
        os.kill(pid, signal.SIGCONT)
    wait_until("health ok after SIGCONT", lambda: _health(session, bid)[0] == "ok", 10)


WORKER = """
import sys
from sliceportal.core.db import session_factory
from sliceportal.models import Backend
from sliceportal.services import deployments

def progress(e):
    # one batch written: the data plane holds part of the push. Tell the test and wait to be killed.
    if e.phase == "write" and e.done > 0:
        print("mid-push", flush=True)
        sys.stdin.readline()

with session_factory(sys.argv[1])() as s:
    deployments.deploy(s, s.get_one(Backend, int(sys.argv[2])), "worker", progress)
"""


def test_the_reconcile_record_says_what_the_data_plane_held(
    client: TestClient, op: dict[str, str], session: Session, db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    port = free_port()
    target = start_target(*EIGHT_QUEUES, "--grpc-port", str(port))
    bid, sid = _setup(client, op, target.address, users=130)  # 4 entries a UE: 130 modified by a move
    # batches of 50: the push below has three, and the worker stops after the first
    session.execute(
        update(Backend).where(Backend.id == bid).values(options={"address": target.address, "batch_size": 50})
    )
    session.commit()
    assert client.post(f"/api/v1/backends/{bid}/deployments", headers=op).json()["status"] == "succeeded"

    # an API worker killed mid-push (a real process, SIGKILLed after its first batch of 500)
    _move_service(client, op, sid, 7001)
    worker = subprocess.Popen(
        [sys.executable, "-c", WORKER, db_url, str(bid)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    try:
        assert worker.stdout is not None
        line = worker.stdout.readline()  # ends when the worker prints, or dies (then "")
        assert line.strip() == "mid-push", line
    finally:
        worker.kill()
        worker.wait(timeout=30)
    # The push was a job (#26): whoever takes the lock once its heartbeat is stale finishes it
    # (tests/fault/test_deploy_jobs.py). A push cut by a version before jobs left no heartbeat:
    # that row is what a reconcile still finds half-written, and names an interrupted push.
    session.execute(
        update(Deployment)
        .where(Deployment.backend_id == bid, Deployment.status == DeploymentStatus.RUNNING)
        .values(heartbeat_at=None)
    )
    session.commit()
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    cut = session.scalar(
        select(Deployment)
        .where(Deployment.backend_id == bid, Deployment.kind == "deploy")
        .order_by(Deployment.id.desc())
        .limit(1)
    )
    assert cut is not None and cut.status == DeploymentStatus.FAILED and cut.error == svc.INTERRUPTED
    assert rec["found"] == "interrupted_push" and rec["restarted_empty"] is False, rec
    assert rec["interrupted_deployment"] == cut.id and rec["held"] > 0 and rec["repaired"], rec
    repair = client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["data"][0]
    assert repair["kind"] == "reconcile" and repair["diff"]["found"] == "interrupted_push", repair

    # a hand edit: half of every table's entries removed behind the portal's back
    session.expire_all()
    backend = session.get_one(Backend, bid)
    in_force = svc.current_rule_set(session, bid)
    assert in_force is not None
    with POOL.use(session, backend) as drv:
        plan = drv.lower(RuleIR.from_json(in_force.ir))
        drv.apply(
            plan.model_copy(
                update={
                    "version": "hand-edit",
                    "tables": {t: entries[: len(entries) // 2] for t, entries in plan.tables.items()},
                }
            ),
            lambda _: None,
        )
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    assert rec["found"] == "drift" and rec["held"] > 0 and not rec["restarted_empty"] and rec["repaired"], rec

    # a restart: the data plane comes back with nothing
    target.stop()
    start_target(*EIGHT_QUEUES, "--grpc-port", str(port))
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    assert rec["found"] == "restarted_empty" and rec["held"] == 0 and rec["restarted_empty"], rec
