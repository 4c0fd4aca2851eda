"""Slice status per backend, derived from facts, against the real p4rt driver and the bundled
P4Runtime target: draft → deployed → pending (with what changed) → deployed; a rollback to a
rule set without a slice → not_deployed; reconcile's drift → out_of_sync; a failed push →
failed; and the SLA status from stored samples and violations (met / degraded / no_data)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, Role, SlaViolation
from sliceportal.testbed.processes import RunningTarget
from tests.factories import login, make_user, slice_type_id, tenant_body

EIGHT_QUEUES = ("--priority-queues", "8")


@pytest.fixture
def op(client: TestClient, session: Session) -> dict[str, str]:
    make_user(session, "op", Role.OPERATOR)
    return login(client, "op")


def _backend(client: TestClient, op: dict[str, str], name: str, address: str) -> int:
    r = client.post("/api/v1/backends", json={"name": name, "driver": "p4rt", "options": {"address": address}},
                    headers=op)
    assert r.status_code == 201, r.text
    return int(r.json()["id"])


def _slice(client: TestClient, op: dict[str, str], tenant: int, name: str, bid: int, port: int) -> int:
    s = client.post("/api/v1/slices", json={
        "name": name, "tenant_id": tenant, "slice_type_id": slice_type_id(client, op, "Flexible Slice"),
        "sla": {"rate_limit_mbps": 48, "max_delay_ms": 20, "max_loss_pct": 1},
        "services": [{"name": "video", "lane": 4, "dst_ports": [{"lo": port, "hi": port + 7}]}],
        "backend_ids": [bid]}, headers=op)
    assert s.status_code == 201, s.text
    return int(s.json()["id"])


def _status(client: TestClient, op: dict[str, str], sid: int) -> dict[str, Any]:
    r = client.get(f"/api/v1/slices/{sid}/status", headers=op)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def _deploy(client: TestClient, op: dict[str, str], bid: int) -> dict[str, Any]:
    r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert r.status_code == 201, r.text
    body: dict[str, Any] = r.json()
    return body


def test_deployment_states_follow_the_rule_set_in_force(client: TestClient, session: Session, op: dict[str, str],
                                                        start_target: Callable[..., RunningTarget]) -> None:
    bid = _backend(client, op, "bmv2", start_target(*EIGHT_QUEUES).address)
    tenant = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    csv = "imsi,ue_ip,teids,tenant,slices\n" + "".join(
        f"00101{u:010d},10.45.0.{u},{u + 1},mvno-a,{'a' if u < 4 else 'b'}\n" for u in range(8))
    a = _slice(client, op, tenant, "a", bid, 5000)
    b = _slice(client, op, tenant, "b", bid, 6000)
    r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")}, headers=op)
    assert r.status_code == 201, r.text

    st = _status(client, op, a)
    assert st["state"] == "draft" and [(x["backend_id"], x["state"], x["sla"]) for x in st["backends"]] == [
        (bid, "draft", "no_data")]

    assert _deploy(client, op, bid)["status"] == "succeeded"
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["rule_set_number"], st["changes"]) == ("deployed", 1, [])
    assert st["since"] is not None
    # the list and the detail say the same
    listed = client.get("/api/v1/slices", headers=op).json()["data"]
    assert {s["id"]: (s["state"], [(x["backend_id"], x["state"]) for x in s["status"]]) for s in listed} == {
        a: ("deployed", [(bid, "deployed")]), b: ("deployed", [(bid, "deployed")])}

    # an edit: pending on that backend, with what a push would change
    sl = client.get(f"/api/v1/slices/{a}", headers=op).json()
    r = client.patch(f"/api/v1/slices/{a}", json={"sla": {**sl["sla"], "rate_limit_mbps": 60},
                                                   "version": sl["version"]}, headers=op)
    assert r.status_code == 200 and r.json()["state"] == "pending"
    st = _status(client, op, a)["backends"][0]
    assert st["state"] == "pending" and "qos.rate_bps: 48000000 → 60000000" in st["changes"]
    assert _status(client, op, b)["backends"][0]["state"] == "deployed"  # the other slice did not change
    counts = {c["state"]: c["count"] for c in client.get("/api/v1/slices/states", headers=op).json()}
    assert counts["pending"] == 1 and counts["deployed"] == 1
    pending = client.get("/api/v1/slices", params={"state": "pending"}, headers=op).json()
    assert [s["id"] for s in pending["data"]] == [a] and pending["count"] == 1

    assert _deploy(client, op, bid)["status"] == "succeeded"
    assert _status(client, op, a)["backends"][0][
        "state"] == "deployed" and _status(client, op, a)["backends"][0]["rule_set_number"] == 2

    # b leaves the backend's configuration; after the push it is not in force there any more
    sl = client.get(f"/api/v1/slices/{b}", headers=op).json()
    other = _backend(client, op, "bmv2-2", start_target(*EIGHT_QUEUES).address)
    client.patch(f"/api/v1/slices/{b}", json={"backend_ids": [bid, other], "version": sl["version"]}, headers=op)
    assert [x["state"] for x in _status(client, op, b)["backends"]] == ["deployed", "draft"]
    # rolled back to a rule set that held a's old rate: a is pending again (the configuration differs)
    back = client.post(f"/api/v1/backends/{bid}/rollback", json={"rule_set": 1}, headers=op)
    assert back.status_code == 201 and back.json()["status"] == "succeeded"
    st = _status(client, op, a)["backends"][0]
    assert st["state"] == "pending" and st["rule_set_number"] == 1
    assert "qos.rate_bps: 48000000 → 60000000" in st["changes"]

    # a third slice, deployed in rule set 3, then a rollback to rule set 2, which lacks it
    c = _slice(client, op, tenant, "c", bid, 7000)
    assert _deploy(client, op, bid)["status"] == "succeeded"
    assert _status(client, op, c)["backends"][0]["state"] == "deployed"
    client.post(f"/api/v1/backends/{bid}/rollback", json={"rule_set": 2}, headers=op)
    st = _status(client, op, c)["backends"][0]
    assert st["state"] == "not_deployed" and "rule set 2" in st["detail"]

    # reconcile found drift: out of sync, with the diff it read back
    backend = session.get(Backend, bid)
    assert backend is not None
    backend.sync_state, backend.sync_detail = "out_of_sync", {"drift": {"classifier": 2}}
    session.commit()
    st = _status(client, op, a)["backends"][0]
    assert st["state"] == "out_of_sync" and st["sync_detail"] == {"drift": {"classifier": 2}}
    assert client.get(f"/api/v1/slices/{a}", headers=op).json()["state"] == "out_of_sync"


def test_failed_push(client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]) -> None:
    # the target fails the first Write RPC of the push: the push is rolled back and recorded failed
    target = start_target(*EIGHT_QUEUES, "--fail-write", "1")
    bid = _backend(client, op, "bmv2", target.address)
    tenant = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    a = _slice(client, op, tenant, "a", bid, 5000)
    r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert r.status_code == 201 and r.json()["status"] == "failed"  # recorded, as every push is
    st = _status(client, op, a)["backends"][0]
    assert st["state"] == "failed" and "failed" in st["detail"] and st["rule_set_number"] is None
    assert client.get(f"/api/v1/slices/{a}", headers=op).json()["state"] == "failed"


def test_sla_status_from_samples(client: TestClient, session: Session, op: dict[str, str]) -> None:
    backend = Backend(name="xdp-x", driver="xdp")
    session.add(backend)
    session.commit()
    tenant = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    sid = _slice(client, op, tenant, "a", backend.id, 5000)
    now = datetime.now(UTC)

    def point(ts: datetime) -> KpiPoint:
        return KpiPoint(slice_id=sid, backend_id=backend.id, lane=4, ts=ts, tx_packets=100, rx_packets=100,
                        rx_bytes=100_000, throughput_bps=8e5, delay_p99_ms=1.0)

    ingest(session, [point(now - timedelta(seconds=30))])
    assert _status(client, op, sid)["backends"][0]["sla"] == "no_data"  # newer than 5 intervals: none
    ingest(session, [point(now - timedelta(seconds=1))])
    st = _status(client, op, sid)["backends"][0]
    assert st["sla"] == "met" and st["last_sample_at"] is not None
    v = SlaViolation(slice_id=sid, backend_id=backend.id, lane=4, metric="loss_pct", threshold=1, worst=7,
                     started_at=now - timedelta(seconds=2))
    session.add(v)
    session.commit()
    st = _status(client, op, sid)["backends"][0]
    assert st["sla"] == "degraded" and [x["id"] for x in st["open_violations"]] == [v.id]
