"""Deploying one slice fans out to every backend it is assigned to (#14 item 5): in parallel,
each under its own lock, streamed per backend, and every backend ends on the new rule set,
its previous one (a failed push rolled back) or unchanged -- the result and the slice's
status say which. Against two bundled P4Runtime targets over gRPC, one of which fails a write.
Every test runs twice: pushed from the request's own threads, and from two lanes (processes of
their own, services/fanout_pool.py), which the settings' default keeps for hundreds of backends."""

from __future__ import annotations

import dataclasses
import json
import os
import sys
from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient

from sliceportal.core.config import Settings, random_secret
from sliceportal.models import Slice
from sliceportal.models.audit import Actor
from sliceportal.services import slice_deploy
from sliceportal_testbed.processes import BMV2_DIR, RunningTarget
from tests.factories import add_backend, embb_slice

EIGHT_QUEUES = ("--priority-queues", "8")


@pytest.fixture(params=["threads", "lanes"])
def settings(request: pytest.FixtureRequest) -> Settings:
    spread = {"fanout_processes": 2, "fanout_min_backends": 1} if request.param == "lanes" else {"fanout_processes": 1}
    return Settings(secret_key=random_secret(), login_max_failures=3, reconcile_interval_s=0, **spread)


def _runners(client: TestClient, op: dict[str, str], bid: int) -> list[str]:
    """The processes (host:pid) that pushed the backend's deployments, newest first."""
    return [d["runner"] for d in client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["data"]]


def _backend(client: TestClient, op: dict[str, str], name: str, address: str) -> int:
    return int(add_backend(client, op, name, {"address": address})["id"])


def _fan_out(client: TestClient, op: dict[str, str], sid: int) -> dict[str, Any]:
    r = client.post(f"/api/v1/slices/{sid}/deploy", headers=op)
    assert r.status_code == 200, r.text
    return dict(r.json())


def _by_name(result: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {b["backend_name"]: b for b in result["backends"]}


def _change(client: TestClient, op: dict[str, str], sid: int, lane: int) -> None:
    svc = client.get(f"/api/v1/slices/{sid}", headers=op).json()["services"][0]
    r = client.patch(
        f"/api/v1/slices/{sid}/services/{svc['id']}", json={"lane": lane, "version": svc["version"]}, headers=op
    )
    assert r.status_code == 200, r.text


def test_fan_out_new_unchanged_and_streamed(
    client: TestClient, op: dict[str, str], settings: Settings, start_target: Callable[..., RunningTarget]
) -> None:
    a = _backend(client, op, "bmv2-a", start_target(*EIGHT_QUEUES).address)
    b = _backend(client, op, "bmv2-b", start_target(*EIGHT_QUEUES).address)
    sid = embb_slice(client, op, [a, b], 8)
    first = _by_name(_fan_out(client, op, sid))
    assert {n: (x["where"], x["status"], x["rule_set"]) for n, x in first.items()} == {
        "bmv2-a": ("new", "succeeded", 1),
        "bmv2-b": ("new", "succeeded", 1),
    }
    status = client.get(f"/api/v1/slices/{sid}/status", headers=op).json()
    assert {x["backend_name"]: (x["state"], x["rule_set_number"]) for x in status["backends"]} == {
        "bmv2-a": ("deployed", 1),
        "bmv2-b": ("deployed", 1),
    }
    again = _fan_out(client, op, sid)
    assert again["ok"] is True and {x["where"] for x in again["backends"]} == {"unchanged"}
    _change(client, op, sid, 2)
    with client.stream("POST", f"/api/v1/slices/{sid}/deploy", headers={**op, "Accept": "application/x-ndjson"}) as r:
        events = [json.loads(line) for line in r.iter_lines() if line]
    assert events[-1]["event"] == "result" and events[-1]["ok"] is True
    assert {e["backend_id"] for e in events if e["event"] == "progress"} == {a, b}
    assert {x["backend_name"]: x["rule_set"] for x in events[-1]["backends"]} == {"bmv2-a": 2, "bmv2-b": 2}
    # where the pushes ran: this process, or a lane per backend, the same one each time
    pids = {bid: {int(r.rsplit(":", 1)[1]) for r in _runners(client, op, bid)} for bid in (a, b)}
    if settings.fanout_processes == 1:
        assert pids == {a: {os.getpid()}, b: {os.getpid()}}
    else:
        assert all(len(p) == 1 and os.getpid() not in p for p in pids.values()), pids
        assert pids[a] != pids[b]  # consecutive ids, two lanes


def test_a_failing_backend_stays_on_its_previous_rule_set(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    a = _backend(client, op, "bmv2-a", start_target(*EIGHT_QUEUES).address)
    # this target fails the 3rd Write RPC of its session: the first or the second deployment to it fails
    b = _backend(client, op, "bmv2-b", start_target(*EIGHT_QUEUES, "--fail-write", "3").address)
    sid = embb_slice(client, op, [a, b], 8)
    before_b: int | None = None
    for attempt, lane in enumerate((0, 2)):
        if attempt:
            _change(client, op, sid, lane)
        result = _fan_out(client, op, sid)
        out = _by_name(result)
        assert out["bmv2-a"]["where"] == "new" and out["bmv2-a"]["rule_set"] == attempt + 1
        if out["bmv2-b"]["where"] == "previous":
            break
        assert out["bmv2-b"]["where"] == "new"
        before_b = out["bmv2-b"]["rule_set"]
    else:
        pytest.fail("the target's failing write never failed a deployment")
    assert result["ok"] is False
    failed = out["bmv2-b"]
    assert failed["status"] == "failed" and failed["error"] and failed["rule_set"] == before_b
    # the slice's status says which backend is where
    status = {x["backend_name"]: x for x in client.get(f"/api/v1/slices/{sid}/status", headers=op).json()["backends"]}
    assert status["bmv2-a"]["state"] == "deployed" and status["bmv2-a"]["rule_set_number"] == out["bmv2-a"]["rule_set"]
    assert status["bmv2-b"]["state"] != "deployed" and status["bmv2-b"]["rule_set_number"] == before_b
    # and the failed backend's data plane holds its previous version (or nothing, as before)
    rec = client.post(f"/api/v1/backends/{b}/reconcile", headers=op).json()
    assert rec["in_sync"] in (True, None)


def test_refusals_before_any_push(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    a = _backend(client, op, "bmv2-a", start_target(*EIGHT_QUEUES).address)
    meter = add_backend(client, op, "bmv2-m", {"address": start_target(*EIGHT_QUEUES).address, "qos_mode": "meter"})[
        "id"
    ]
    sid = embb_slice(client, op, [a, meter], 8)
    r = client.post(f"/api/v1/slices/{sid}/deploy", headers=op)
    # the meter-mode backend cannot mark ECN: refused there, so nothing is pushed to either
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == f"slices.{sid}.sla.ecn_delay_ms"
    for bid in (a, meter):
        assert client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["count"] == 0
    lonely = client.patch(
        f"/api/v1/slices/{sid}",
        json={"backend_ids": [], "version": client.get(f"/api/v1/slices/{sid}", headers=op).json()["version"]},
        headers=op,
    )
    assert lonely.status_code == 200
    r = client.post(f"/api/v1/slices/{sid}/deploy", headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "backend_ids"


def test_a_slice_on_a_fleet_deploys_to_every_backend(client: TestClient, op: dict[str, str]) -> None:
    """More backends than the connection pool holds pairs for (a push holds its session and
    the backend's advisory lock): a thread per backend left every push waiting on a connection
    another held, and the request failed as "database unavailable" (bench/scale_backends.py
    at 100 backends). 40 targets, one process (bmv2_target.fleet)."""
    if str(BMV2_DIR) not in sys.path:
        sys.path.insert(0, str(BMV2_DIR))
    from bmv2_target.fleet import Fleet

    fleet = Fleet(40)
    try:
        ids = [_backend(client, op, f"agent-{i:02d}", a) for i, a in enumerate(fleet.addresses)]
        sid = embb_slice(client, op, ids, 8)
        result = _fan_out(client, op, sid)
        assert result["ok"] is True, result
        assert [(x["backend_id"], x["where"], x["rule_set"]) for x in result["backends"]] == [
            (b, "new", 1) for b in ids
        ]
    finally:
        fleet.stop()


def test_a_backend_gone_after_the_preflight_is_refused_alone(
    client: TestClient, op: dict[str, str], settings: Settings, start_target: Callable[..., RunningTarget]
) -> None:
    """A fan-out reads each backend's row once, under its lock: one that is gone by then (its
    row deleted after the preflight) is refused by name; the others are pushed."""
    a = _backend(client, op, "bmv2-a", start_target(*EIGHT_QUEUES).address)
    sid = embb_slice(client, op, [a], 8)
    sessions = client.app.state.sessionmaker  # type: ignore[attr-defined]
    with sessions() as s:
        prepared = slice_deploy.preflight(s, s.get_one(Slice, sid), None)
    gone = dataclasses.replace(prepared[0], backend_id=a + 1000, backend_name="gone")
    outcomes = slice_deploy.deploy_slice(sessions, Actor(None, "test"), [*prepared, gone])
    by_id = {o.backend_id: o for o in outcomes}
    assert (by_id[a].where, by_id[a].status) == ("new", "succeeded")
    assert (by_id[a + 1000].status, by_id[a + 1000].backend_name) == ("refused", "gone")
    assert "does not exist" in by_id[a + 1000].error
