"""The rule pipeline end to end through the API, against the real p4rt driver and the
bundled P4Runtime target over gRPC: preview, deploy, refusal before write, rollback,
failure mid-push, reconcile after a restart."""

from __future__ import annotations

import json
from collections.abc import Callable

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.core.db import session_factory
from sliceportal.core.process_metrics import REGISTRY
from sliceportal.models import AuditLog
from sliceportal.services.reconciler import Reconciler
from sliceportal_testbed.processes import RunningTarget, free_port
from tests.factories import add_backend, deploy_backend, embb_slice

EIGHT_QUEUES = ("--priority-queues", "8")


def _setup(client: TestClient, op: dict[str, str], address: str, users: int = 32) -> tuple[int, int]:
    """A tenant with one Flexible Slice (seed 000 Table 2 services) and ``users`` UEs on a p4rt backend."""
    backend = add_backend(client, op, "bmv2", {"address": address})
    # registration answers at once; the bounded health probe runs right after the response
    assert backend["health"] == "probing" and backend["lanes"] == 8
    bid = backend["id"]
    assert client.get(f"/api/v1/backends/{bid}", headers=op).json()["health"] == "ok"
    # seed 000 Table 2: ports 5000-5006 (even) -> lane group 0 ...; as aligned ranges 5000-5007 ...
    return bid, embb_slice(client, op, [bid], users)


def test_preview_deploy_and_audit(
    client: TestClient, session: Session, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, sid = _setup(client, op, target.address)
    p = client.get(f"/api/v1/backends/{bid}/preview", headers=op).json()
    # 32 users (one /27) x 4 services (one aligned port range each): one rule per lane once minimised
    assert p["flows"] == 32 * 4 and p["rules_after"] == 4 < p["rules_before"]
    assert p["slices"][0]["lane_map"] == [[0, 0], [2, 2], [4, 4], [6, 6]]
    assert sum(len(v) for v in p["tables"].values()) >= 4
    dep = deploy_backend(client, op, bid)
    assert dep["status"] == "succeeded" and dep["kind"] == "deploy" and dep["error"] == ""
    assert client.get(f"/api/v1/slices/{sid}", headers=op).json()["state"] == "deployed"
    # the data plane holds what was deployed: reconcile finds it in sync
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    assert rec["in_sync"] is True and rec["found_version"] == p["version"]
    # a second deploy of the same configuration is a no-op: no rule set, no push, audited as such
    again = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert again.status_code == 200, again.text
    assert again.json() == {
        "backend_id": bid,
        "status": "unchanged",
        "rule_set": dep["rule_set_number"],
        "digest": p["version"],
        "detail": f"already deployed as rule set {dep['rule_set_number']}",
    }
    audit = session.scalars(select(AuditLog).where(AuditLog.action == "deploy").order_by(AuditLog.id)).all()
    assert len(audit) == 2 and audit[0].actor == "op" and audit[0].after is not None
    assert audit[1].after == {"status": "unchanged", "rule_set": 1, "digest": p["version"]}
    history = client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()
    assert history["count"] == 1 and history["data"][0]["id"] == dep["id"]
    assert client.get(f"/api/v1/backends/{bid}/rule-sets/2", headers=op).status_code == 404
    # streamed, the same answer is the stream's result event
    with client.stream(
        "POST", f"/api/v1/backends/{bid}/deployments", headers={**op, "Accept": "application/x-ndjson"}
    ) as r:
        import json

        events = [json.loads(line) for line in r.iter_lines() if line]
    assert events == [{"event": "result", **again.json()}]
    # a changed slice deploys again (a new rule set), and the original is no longer "in force"
    svc = client.get(f"/api/v1/slices/{sid}", headers=op).json()["services"][0]
    assert (
        client.patch(
            f"/api/v1/slices/{sid}/services/{svc['id']}", json={"lane": 2, "version": svc["version"]}, headers=op
        ).status_code
        == 200
    )
    changed = deploy_backend(client, op, bid)
    assert changed["status"] == "succeeded" and changed["rule_set_number"] == 2


def test_streamed_progress(client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, _ = _setup(client, op, target.address)
    compiles_before = _compiles()
    with client.stream(
        "POST", f"/api/v1/backends/{bid}/deployments", headers={**op, "Accept": "application/x-ndjson"}
    ) as r:
        lines = [json.loads(line) for line in r.iter_lines() if line]
    assert [e["event"] for e in lines][-1] == "result"
    assert any(e["event"] == "progress" for e in lines)
    assert lines[-1]["status"] == "succeeded"
    # compile, admission and lowering run once, in the job (the request used to preview first)
    assert _compiles() - compiles_before == 1


def _compiles() -> float:
    """Compiles this process ran (its ``sliceportal_compile_duration_seconds`` count, p4rt)."""
    return REGISTRY.get_sample_value("sliceportal_compile_duration_seconds_count", {"driver": "p4rt"}) or 0.0


def test_rollback_to_an_earlier_rule_set(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target(*EIGHT_QUEUES)
    bid, sid = _setup(client, op, target.address)
    first = deploy_backend(client, op, bid)
    v1 = client.get(f"/api/v1/backends/{bid}/preview", headers=op).json()["version"]
    slice_ = client.get(f"/api/v1/slices/{sid}", headers=op).json()
    svc = slice_["services"][0]
    r = client.patch(
        f"/api/v1/slices/{sid}/services/{svc['id']}", json={"lane": 2, "version": svc["version"]}, headers=op
    )
    assert r.status_code == 200
    second = deploy_backend(client, op, bid)
    assert second["status"] == "succeeded" and second["diff"] != first["diff"]
    back = client.post(f"/api/v1/backends/{bid}/rollback", json={"rule_set": 1}, headers=op)
    assert back.status_code == 201 and back.json()["kind"] == "rollback" and back.json()["status"] == "succeeded"
    rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    assert rec["in_sync"] is True and rec["found_version"] == v1
    assert client.post(f"/api/v1/backends/{bid}/rollback", json={"rule_set": 99}, headers=op).status_code == 404


def test_failed_push_leaves_the_previous_version(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    # Write RPCs: pipeline/initial writes succeed; the 3rd Write of the session fails
    target = start_target(*EIGHT_QUEUES, "--fail-write", "3")
    bid, sid = _setup(client, op, target.address, users=8)
    first = client.post(f"/api/v1/backends/{bid}/deployments", headers=op).json()
    if first["status"] == "succeeded":
        v1 = client.get(f"/api/v1/backends/{bid}/preview", headers=op).json()["version"]
        slice_ = client.get(f"/api/v1/slices/{sid}", headers=op).json()
        svc = slice_["services"][0]
        client.patch(
            f"/api/v1/slices/{sid}/services/{svc['id']}", json={"lane": 2, "version": svc["version"]}, headers=op
        )
        failed = client.post(f"/api/v1/backends/{bid}/deployments", headers=op).json()
        rec = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
        expected = v1
    else:
        failed, expected = first, None
    assert failed["status"] == "failed" and failed["error"]
    assert failed["rolled_back"] is True
    if expected is not None:
        assert rec["found_version"] == expected


def test_reconcile_loop_refills_a_restarted_data_plane(
    client: TestClient, op: dict[str, str], db_url: str, start_target: Callable[..., RunningTarget]
) -> None:
    port = free_port()
    target = start_target(*EIGHT_QUEUES, "--grpc-port", str(port))
    bid, _ = _setup(client, op, target.address)
    version = deploy_backend(client, op, bid)
    assert version["status"] == "succeeded"
    target.stop()
    start_target(*EIGHT_QUEUES, "--grpc-port", str(port))  # comes back empty
    Reconciler(session_factory(db_url), interval_s=1).run_once()  # what the loop does each interval
    repair = client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["data"][0]
    assert repair["kind"] == "reconcile" and repair["status"] == "succeeded"
    assert repair["diff"]["restarted_empty"] is True
    again = client.post(f"/api/v1/backends/{bid}/reconcile", headers=op).json()
    assert again["in_sync"] is True
    kinds = [d["kind"] for d in client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["data"]]
    assert kinds == ["reconcile", "deploy"]


def test_unknown_driver_and_bad_options(client: TestClient, op: dict[str, str]) -> None:
    r = client.post("/api/v1/backends", json={"name": "x", "driver": "nope"}, headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "driver"
    r = client.post("/api/v1/backends", json={"name": "x", "driver": "p4rt", "options": {"lanes": 99}}, headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "options.lanes"  # the option itself


def test_intent_listing_1(client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]) -> None:
    target = start_target(*EIGHT_QUEUES)
    _, sid = _setup(client, op, target.address)
    tenant_vni = client.get("/api/v1/tenants", headers=op).json()["data"][0]["vni"]
    intent = {
        "Resources": [
            {"resourceId": "F8A4C949", "encapsulationID1": f"{tenant_vni:08X}", "encapsulationType1": "vxlan"},
            {"resourceId": "B6E6B2B3", "encapsulationID2": "00000003", "encapsulationType2": "gtp"},
            {"resourceId": "5A07C580", "srcIP": "10.45.0.2", "dstPort": "6000"},
        ],
        "Action": {"actionType": "INSERT", "actionName": "PRIO-QUEUE", "flow_hash": "E918D704", "rx_queue": "6"},
        "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}],
    }
    r = client.post("/api/v1/intents", json=intent, headers=op)
    assert r.status_code == 201, r.text
    body = r.json()
    (created,) = body["intents"]
    assert created["slice_id"] == sid and created["action"]["lane"] == 6
    assert body["deployments"][0]["status"] == "succeeded"
    # an intent is per flow (issue #14): no slice-wide service class is created for it
    assert len(client.get(f"/api/v1/slices/{sid}/services", headers=op).json()) == 4
    deleted = client.post(
        "/api/v1/intents", json={**intent, "Action": {**intent["Action"], "actionType": "DELETE"}}, headers=op
    )
    assert deleted.status_code == 201 and deleted.json()["intents"][0]["id"] == created["id"]
    assert client.get("/api/v1/intents", headers=op).json()["count"] == 0
    bad = client.post("/api/v1/intents", json={**intent, "Action": {**intent["Action"], "rx_queue": "zz"}}, headers=op)
    assert bad.status_code == 422 and bad.json()["errors"]
    unknown_tenant = {
        **intent,
        "Resources": [{**intent["Resources"][0], "encapsulationID1": "00FFFFFF"}, *intent["Resources"][1:]],
    }
    r = client.post("/api/v1/intents", json=unknown_tenant, headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "tenant_vni"
