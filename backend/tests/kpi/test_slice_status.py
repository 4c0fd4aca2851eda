"""Slice status per backend, derived from facts, against the real p4rt driver and the bundled
P4Runtime target: draft → deployed → pending (with what changed) → deployed; a rollback to a
rule set without a slice → not_deployed; reconcile's drift → out_of_sync; a failed push →
failed; a slice's rate_limit / drop intents (sub-slices) not yet or no longer in force →
pending, naming the intent; and the SLA status from stored samples and violations (met /
degraded / no_data)."""

from __future__ import annotations

from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, Intent, RuleSet, SlaViolation
from sliceportal.services.slice_status import slice_parts
from sliceportal_testbed.processes import RunningTarget
from tests.factories import add_backend, add_slice, add_tenant, deploy_backend, import_subscribers, ue_rows

EIGHT_QUEUES = ("--priority-queues", "8")


def _backend(client: TestClient, op: dict[str, str], name: str, address: str) -> int:
    return int(add_backend(client, op, name, {"address": address})["id"])


def _slice(client: TestClient, op: dict[str, str], tenant: int, name: str, bid: int, port: int) -> int:
    return add_slice(
        client,
        op,
        tenant,
        name,
        sla={"rate_limit_mbps": 48, "max_delay_ms": 20, "max_loss_pct": 1},
        services=[{"name": "video", "lane": 4, "dst_ports": [{"lo": port, "hi": port + 7}]}],
        backend_ids=[bid],
    )


def _status(client: TestClient, op: dict[str, str], sid: int) -> dict[str, Any]:
    r = client.get(f"/api/v1/slices/{sid}/status", headers=op)
    assert r.status_code == 200, r.text
    body: dict[str, Any] = r.json()
    return body


def test_deployment_states_follow_the_rule_set_in_force(
    client: TestClient, session: Session, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    bid = _backend(client, op, "bmv2", start_target(*EIGHT_QUEUES).address)
    tenant = add_tenant(client, op)
    a = _slice(client, op, tenant, "a", bid, 5000)
    b = _slice(client, op, tenant, "b", bid, 6000)
    import_subscribers(client, op, ue_rows(range(4), "a") + ue_rows(range(4, 8), "b"))

    st = _status(client, op, a)
    assert st["state"] == "draft" and [(x["backend_id"], x["state"], x["sla"]) for x in st["backends"]] == [
        (bid, "draft", "no_data")
    ]

    assert deploy_backend(client, op, bid)["status"] == "succeeded"
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["rule_set_number"], st["changes"]) == ("deployed", 1, [])
    assert st["since"] is not None
    # the list and the detail say the same
    listed = client.get("/api/v1/slices", headers=op).json()["data"]
    assert {s["id"]: (s["state"], [(x["backend_id"], x["state"]) for x in s["status"]]) for s in listed} == {
        a: ("deployed", [(bid, "deployed")]),
        b: ("deployed", [(bid, "deployed")]),
    }

    # an edit: pending on that backend, with what a push would change
    sl = client.get(f"/api/v1/slices/{a}", headers=op).json()
    r = client.patch(
        f"/api/v1/slices/{a}", json={"sla": {**sl["sla"], "rate_limit_mbps": 60}, "version": sl["version"]}, headers=op
    )
    assert r.status_code == 200 and r.json()["state"] == "pending"
    st = _status(client, op, a)["backends"][0]
    assert st["state"] == "pending" and "qos.rate_bps: 48000000 → 60000000" in st["changes"]
    assert _status(client, op, b)["backends"][0]["state"] == "deployed"  # the other slice did not change
    counts = {c["state"]: c["count"] for c in client.get("/api/v1/slices/states", headers=op).json()}
    assert counts["pending"] == 1 and counts["deployed"] == 1
    pending = client.get("/api/v1/slices", params={"state": "pending"}, headers=op).json()
    assert [s["id"] for s in pending["data"]] == [a] and pending["count"] == 1

    assert deploy_backend(client, op, bid)["status"] == "succeeded"
    assert (
        _status(client, op, a)["backends"][0]["state"] == "deployed"
        and _status(client, op, a)["backends"][0]["rule_set_number"] == 2
    )

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
    assert deploy_backend(client, op, bid)["status"] == "succeeded"
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
    tenant = add_tenant(client, op)
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
    tenant = add_tenant(client, op)
    sid = _slice(client, op, tenant, "a", backend.id, 5000)
    now = datetime.now(UTC)

    def point(ts: datetime) -> KpiPoint:
        return KpiPoint(
            slice_id=sid,
            backend_id=backend.id,
            lane=4,
            source="testbed",
            ts=ts,
            tx_packets=100,
            rx_packets=100,
            rx_bytes=100_000,
            throughput_bps=8e5,
            delay_p99_ms=1.0,
        )

    ingest(session, [point(now - timedelta(seconds=30))])
    assert _status(client, op, sid)["backends"][0]["sla"] == "no_data"  # newer than 5 intervals: none
    ingest(session, [point(now - timedelta(seconds=1))])
    st = _status(client, op, sid)["backends"][0]
    assert st["sla"] == "met" and st["last_sample_at"] is not None
    v = SlaViolation(
        slice_id=sid,
        backend_id=backend.id,
        lane=4,
        metric="loss_pct",
        threshold=1,
        worst=7,
        started_at=now - timedelta(seconds=2),
    )
    session.add(v)
    session.commit()
    st = _status(client, op, sid)["backends"][0]
    assert st["sla"] == "degraded" and [x["id"] for x in st["open_violations"]] == [v.id]


def _rule_set_ir(session: Session, bid: int, number: int) -> dict[str, Any]:
    rs = session.scalar(select(RuleSet).where(RuleSet.backend_id == bid, RuleSet.number == number))
    assert rs is not None
    return rs.ir


def _rollback(client: TestClient, op: dict[str, str], bid: int, number: int) -> None:
    r = client.post(f"/api/v1/backends/{bid}/rollback", json={"rule_set": number}, headers=op)
    assert r.status_code == 201 and r.json()["status"] == "succeeded", r.text


@pytest.mark.parametrize(
    ("action", "words"),
    [
        ({"action": "rate_limit", "rate_mbps": 5}, " (rate_limit 5 Mbit/s)"),
        ({"action": "drop"}, " (drop)"),
        # a prioritise intent has no sub-slice: its entries (the slice's id) are named by their note
        ({"lane": 6}, ""),
    ],
)
def test_state_covers_the_slices_policed_intents(
    client: TestClient,
    session: Session,
    op: dict[str, str],
    start_target: Callable[..., RunningTarget],
    action: dict[str, Any],
    words: str,
) -> None:
    """A rate_limit / drop intent is a sub-slice of its own in the rule set (same ref as the
    slice), a prioritise intent entries of the slice's id: whether the data plane holds them is
    part of the slice's state, named by the intent. Rule sets with and
    without the intent are put in force by pushes and rollbacks through the API."""
    bid = _backend(client, op, "bmv2", start_target(*EIGHT_QUEUES).address)
    tenant = add_tenant(client, op)
    a = _slice(client, op, tenant, "a", bid, 5000)
    import_subscribers(client, op, ue_rows(range(4), "a"))
    assert deploy_backend(client, op, bid)["status"] == "succeeded"  # rule set 1: the slice, no intent

    r = client.post(
        "/api/v1/intents",
        json={"operation": "insert", "imsi": ["001010000000001"], "dst_ports": [[5000, 5007]], **action},
        headers=op,
    )
    assert r.status_code == 201 and [d["status"] for d in r.json()["deployments"]] == ["succeeded"], r.text
    iid = r.json()["intents"][0]["id"]
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["rule_set_number"], st["changes"]) == ("deployed", 2, [])

    # the plane holds rule set 1 again, without the intent: the slice is not as configured
    _rollback(client, op, bid, 1)
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["rule_set_number"]) == ("pending", 1)
    assert st["changes"] == [f"intent {iid}{words}: not in force yet (1 classifier entry)"]
    listed = client.get("/api/v1/slices", headers=op).json()["data"]
    assert [(s["id"], s["state"]) for s in listed] == [(a, "pending")]
    assert deploy_backend(client, op, bid)["status"] == "succeeded"
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["rule_set_number"], st["changes"]) == ("deployed", 3, [])

    # which entry of the IR comes first does not matter: the sub-slice is never taken for the slice
    ir = _rule_set_ir(session, bid, 3)
    assert [s.get("intent_ref") for s in ir["slices"]] == ([None, iid] if words else [None])
    turned = {**ir, "slices": ir["slices"][::-1], "rules": ir["rules"][::-1]}
    assert slice_parts(turned)[a] == slice_parts(ir)[a]
    part = slice_parts(turned)[a]
    assert part is not None and set(part) == {None, iid} and "intent_ref" not in (part[None].entry or {})

    # the intent deleted (and pushed): deployed; the plane back on rule set 3 still holds it
    gone = client.delete(f"/api/v1/intents/{iid}", headers=op)
    assert gone.status_code == 200 and gone.json()["deployments"][0]["status"] == "succeeded"
    assert _status(client, op, a)["backends"][0]["state"] == "deployed"
    _rollback(client, op, bid, 3)
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["rule_set_number"]) == ("pending", 3)
    assert st["changes"] == [f"intent {iid}{words}: removed since the push, still in force (1 classifier entry)"]


def test_a_changed_intent_is_named(
    client: TestClient, session: Session, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    """The intent's rate and the slice's burst limit its sub-slice inherits: each change is
    named on the intent (the slice's own entries alongside)."""
    bid = _backend(client, op, "bmv2", start_target(*EIGHT_QUEUES).address)
    tenant = add_tenant(client, op)
    a = _slice(client, op, tenant, "a", bid, 5000)
    import_subscribers(client, op, ue_rows([1], "a"))
    r = client.post(
        "/api/v1/intents",
        json={
            "operation": "insert",
            "imsi": ["001010000000001"],
            "dst_ports": [[5000, 5007]],
            "action": "rate_limit",
            "rate_mbps": 5,
        },
        headers=op,
    )
    assert r.status_code == 201 and [d["status"] for d in r.json()["deployments"]] == ["succeeded"], r.text
    iid = r.json()["intents"][0]["id"]
    assert _status(client, op, a)["backends"][0]["state"] == "deployed"

    # a new rate (no API edits an intent yet; the row is the configuration the status compiles)
    it = session.get_one(Intent, iid)
    it.rate_mbps = 4
    session.commit()
    st = _status(client, op, a)["backends"][0]
    assert (st["state"], st["changes"]) == ("pending", [f"intent {iid}: rate_limit 5 Mbit/s → 4 Mbit/s"])
    it.rate_mbps = 5
    session.commit()
    assert _status(client, op, a)["backends"][0]["state"] == "deployed"

    sl = client.get(f"/api/v1/slices/{a}", headers=op).json()
    r = client.patch(
        f"/api/v1/slices/{a}", json={"sla": {**sl["sla"], "max_delay_ms": 30}, "version": sl["version"]}, headers=op
    )
    assert r.status_code == 200, r.text
    st = _status(client, op, a)["backends"][0]
    assert st["state"] == "pending"
    assert f"intent {iid} (rate_limit 5 Mbit/s): qos.burst_ms: 20.0 → 30.0" in st["changes"]
