"""Intents as objects through the API (issue #14 item 1), on real PostgreSQL and the real
p4rt driver pushing to the bundled P4Runtime target: create (Listing 1 and native),
idempotency, list / read with the entries each backend holds, conflicts, tenant scoping,
delete, audit."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog, Intent
from sliceportal_testbed.processes import RunningTarget
from tests.factories import (
    add_backend,
    add_slice,
    add_tenant,
    import_subscribers,
    integrator_key,
    table2_services,
)

UES = 100


def imsi(u: int) -> str:
    return f"00101{u:010d}"


def _tenant_with_slice(
    client: TestClient, op: dict[str, str], name: str, vni: int, vlan: int, net: str, backend_ids: list[int]
) -> tuple[int, int]:
    t = add_tenant(client, op, name, vni, vlan)
    sid = add_slice(client, op, t, f"{name}-embb", services=table2_services(), backend_ids=backend_ids)
    import_subscribers(
        client, op, (f"{imsi(vni * 1000 + u)},{net}.{u},{vni * 1000 + u},{name},{name}-embb" for u in range(UES))
    )
    return t, sid


@pytest.fixture
def world(client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]) -> dict[str, Any]:
    target = start_target("--priority-queues", "8")
    bid = add_backend(client, op, "bmv2", {"address": target.address})["id"]
    ta, sa = _tenant_with_slice(client, op, "mvno-a", 5001, 100, "10.45.0", [bid])
    tb, sb = _tenant_with_slice(client, op, "mvno-b", 5002, 200, "10.46.0", [])
    return {"backend": bid, "tenant_a": ta, "slice_a": sa, "tenant_b": tb, "slice_b": sb}


def native(u: int, lane: int = 6, **extra: Any) -> dict[str, Any]:
    return {"operation": "insert", "imsi": [imsi(5001 * 1000 + u)], "dst_ports": [[5000, 5007]], "lane": lane, **extra}


def test_create_read_entries_and_delete(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, Any]
) -> None:
    r = client.post("/api/v1/intents", json=native(7), headers=op)
    assert r.status_code == 201, r.text
    body = r.json()
    (it,) = body["intents"]
    assert it["slice_id"] == world["slice_a"] and it["tenant_id"] == world["tenant_a"] and it["owner"] == "op"
    assert it["action"] == {"type": "prioritise", "lane": 6, "rr_path": None, "rate_mbps": None}
    assert it["match"]["imsis"] == [imsi(5001007)] and it["source"] == native(7)
    assert [d["status"] for d in body["deployments"]] == ["succeeded"]

    detail = client.get(f"/api/v1/intents/{it['id']}", headers=op).json()
    (entries,) = detail["entries"]
    assert entries["backend_id"] == world["backend"] and entries["driver"] == "p4rt"
    # exactly UE 10.45.0.7, ports 5000-5007 (one aligned block), lane 6, first in the rule list
    ue7 = (10 << 24) | (45 << 16) | 7
    assert [e["index"] for e in entries["rules"]] == [0]
    (rule,) = entries["rules"]
    assert rule["match"]["src_ip"] == {"value": ue7, "mask": 0xFFFFFFFF}
    assert rule["match"]["dst_port"] == {"value": 5000, "mask": 0xFFF8}
    assert rule["action"]["lane"] == 6
    assert entries["policer"] is None and entries["counters"] == {"packets": 0, "drops": {}}  # the slice's policer
    # the rule set in force holds it: the slice's own rules follow it
    rs = client.get(f"/api/v1/backends/{world['backend']}/preview", headers=op).json()
    assert rs["ir"]["rules"][0]["note"].startswith(f"intent #{it['id']}:") and len(rs["ir"]["rules"]) > 1

    listed = client.get("/api/v1/intents", params={"slice_id": world["slice_a"]}, headers=op).json()
    assert listed["count"] == 1 and listed["data"][0]["id"] == it["id"]
    assert client.get("/api/v1/intents", params={"slice_id": world["slice_b"]}, headers=op).json()["count"] == 0

    gone = client.delete(f"/api/v1/intents/{it['id']}", headers=op)
    assert gone.status_code == 200 and gone.json()["deployments"][0]["status"] == "succeeded"
    assert client.get(f"/api/v1/intents/{it['id']}", headers=op).status_code == 404
    after = client.get(f"/api/v1/backends/{world['backend']}/preview", headers=op).json()
    assert not any(r["note"].startswith("intent #") for r in after["ir"]["rules"])
    audit = session.scalars(select(AuditLog.action).where(AuditLog.object_type == "intent").order_by(AuditLog.id)).all()
    assert audit == ["create", "delete"]


@pytest.mark.parametrize(
    ("extra", "qos"),
    [
        ({"action": "rate_limit", "rate_mbps": 2.5}, {"rate_bps": 2_500_000}),
        ({"action": "drop"}, {"rate_bps": 0}),
    ],
)
def test_rate_limit_and_drop_get_a_policer_of_their_own(
    client: TestClient, op: dict[str, str], world: dict[str, Any], extra: dict[str, Any], qos: dict[str, int]
) -> None:
    """One UE of 100: its flows get a sub-slice (the parent's ref, the intent's policer) on
    the backend; the slice's other UEs keep the slice's id; DELETE restores the rule set."""
    before = client.get(f"/api/v1/backends/{world['backend']}/preview", headers=op).json()["ir"]
    body = {k: v for k, v in native(7).items() if k != "lane"} | extra
    r = client.post("/api/v1/intents", json=body, headers=op)
    assert r.status_code == 201, r.text
    (it,) = r.json()["intents"]
    assert it["action"]["type"] == extra["action"] and it["action"]["rate_mbps"] == extra.get("rate_mbps")
    assert [d["status"] for d in r.json()["deployments"]] == ["succeeded"]
    (entries,) = client.get(f"/api/v1/intents/{it['id']}", headers=op).json()["entries"]
    ir = client.get(f"/api/v1/backends/{world['backend']}/preview", headers=op).json()["ir"]
    parent = next(s for s in ir["slices"] if s["ref"] == world["slice_a"] and "intent_ref" not in s)
    (sub,) = [s for s in ir["slices"] if s.get("intent_ref") == it["id"]]
    assert sub["ref"] == world["slice_a"] and {k: sub["qos"][k] for k in qos} == qos
    assert sub["slice_id"] != parent["slice_id"]
    # the detail names the policer there and what the data plane counted for it (no traffic yet)
    assert entries["policer"] == {
        "slice_id": sub["slice_id"],
        "rate_bps": qos["rate_bps"],
        "burst_ms": sub["qos"]["burst_ms"],
    }
    assert entries["counters"] == {"packets": 0, "drops": {}}
    ue7 = (10 << 24) | (45 << 16) | 7
    assert entries["rules"] and all(e["action"]["slice_id"] == sub["slice_id"] for e in entries["rules"])
    assert all(e["match"]["src_ip"] == {"value": ue7, "mask": 0xFFFFFFFF} for e in entries["rules"])
    # the slice's own rules are those of the rule set without the intent
    own = [r for r in ir["rules"] if not r["note"].startswith("intent #")]
    assert own == before["rules"] and all(r["action"]["slice_id"] == parent["slice_id"] for r in own)
    gone = client.delete(f"/api/v1/intents/{it['id']}", headers=op)
    assert gone.status_code == 200 and gone.json()["deployments"][0]["status"] == "succeeded"
    after = client.get(f"/api/v1/backends/{world['backend']}/preview", headers=op).json()["ir"]
    assert after["rules"] == before["rules"] and after["slices"] == before["slices"]


def test_rate_limit_needs_a_free_policer_slot(client: TestClient, session: Session, op: dict[str, str]) -> None:
    """A NetFPGA bitstream with 2 rate-limiter buckets (slice 1 only): the intent's sub-slice
    (id 2) has none left -- 409 on ``action`` naming the backend and the table, nothing stored.
    The driver's lowering is pure: no simulator needs to run."""
    from sliceportal.core.config import DEFAULT_DATA_DIR
    from sliceportal_testbed.processes import free_port

    options = {"address": f"unix:{DEFAULT_DATA_DIR}/run/h2-absent-{free_port()}.sock", "rate_slices": 2}
    b = add_backend(client, op, "nf-small", options, "netfpga")
    _tenant_with_slice(client, op, "mvno-c", 5003, 300, "10.47.0", [b["id"]])
    for extra in ({"action": "rate_limit", "rate_mbps": 5}, {"action": "drop"}):
        r = client.post("/api/v1/intents", json={"operation": "insert", "ue": "10.47.0.9", **extra}, headers=op)
        assert r.status_code == 409, r.text
        (issue,) = r.json()["errors"]
        assert issue["field"] == "action" and "nf-small" in issue["message"] and "rate_limits" in issue["message"]
    assert session.scalar(select(func.count()).select_from(Intent)) == 0
    # a prioritise intent needs no policer: it fits
    ok = client.post("/api/v1/intents", json={"operation": "insert", "ue": "10.47.0.9", "lane": 6}, headers=op)
    assert ok.status_code == 201, ok.text


def test_idempotency_key(client: TestClient, session: Session, op: dict[str, str], world: dict[str, Any]) -> None:
    key = {**op, "Idempotency-Key": "retry-1"}
    first = client.post("/api/v1/intents", json=native(3), headers=key)
    assert first.status_code == 201, first.text
    again = client.post("/api/v1/intents", json=native(3), headers=key)
    assert again.status_code == 201 and again.headers["Idempotent-Replayed"] == "true"
    assert again.json() == first.json()
    assert session.scalar(select(func.count()).select_from(Intent)) == 1
    # remembering the first answer is no change: one audit row, version 1
    made = first.json()["intents"][0]["id"]
    assert session.scalars(
        select(AuditLog.action).where(AuditLog.object_type == "intent", AuditLog.object_id == made)
    ).all() == ["create"]
    assert client.get(f"/api/v1/intents/{made}", headers=op).json()["version"] == 1
    other = client.post("/api/v1/intents", json=native(4), headers=key)
    assert other.status_code == 409 and other.json()["errors"][0]["field"] == "Idempotency-Key"
    assert str(first.json()["intents"][0]["id"]) in other.json()["detail"]
    assert session.scalar(select(func.count()).select_from(Intent)) == 1
    # without a key the same body is a second intent (same action: no conflict)
    assert client.post("/api/v1/intents", json=native(3), headers=op).status_code == 201
    assert session.scalar(select(func.count()).select_from(Intent)) == 2


def test_conflict_names_both_and_changes_nothing(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, Any]
) -> None:
    a = client.post("/api/v1/intents", json=native(9, lane=6), headers=op).json()["intents"][0]["id"]
    # a /28 around UE 9, ports overlapping 5000-5007, another lane
    r = client.post(
        "/api/v1/intents",
        json={"operation": "insert", "ue": "10.45.0.0/28", "dst_ports": [[5004, 5004]], "lane": 2},
        headers=op,
    )
    assert r.status_code == 409, r.text
    assert f"intent {a} (prioritise into lane 6" in r.json()["detail"] and "lane 2" in r.json()["detail"]
    assert session.scalar(select(func.count()).select_from(Intent)) == 1
    # disjoint ports: fine
    ok = client.post(
        "/api/v1/intents",
        json={"operation": "insert", "ue": "10.45.0.0/28", "dst_ports": [[5008, 5015]], "lane": 2},
        headers=op,
    )
    assert ok.status_code == 201, ok.text


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"operation": "insert", "imsi": ["001019999999999"], "lane": 6}, "imsi"),  # nobody's IMSI
        ({"operation": "insert", "ue": "10.45.1.7", "lane": 6}, "ue"),  # no such UE
        ({"operation": "insert", "imsi": [imsi(5001007)], "lane": 5}, "lane"),  # Flexible Slice has 0/2/4/6
        ({"operation": "insert", "imsi": [imsi(5001007)], "action": "rate_limit", "rate_mbps": 0}, "rate_mbps"),
        ({"operation": "insert", "imsi": [imsi(5001007)], "action": "rate_limit", "rate_mbps": -1}, "rate_mbps"),
        ({"operation": "insert", "imsi": [imsi(5001007)], "lane": 6, "protocol": "tcp"}, "protocol"),
        ({"operation": "insert", "imsi": [imsi(5001007)], "action": "steer", "rr_path": 99}, "rr_path"),
        ({"operation": "insert", "imsi": [imsi(5001007)], "teid": 1, "lane": 6}, "teid"),  # not this UE's TEID
    ],
)
def test_refusals_name_the_field(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, Any], body: dict[str, Any], field: str
) -> None:
    r = client.post("/api/v1/intents", json=body, headers=op)
    assert r.status_code == 422, r.text
    assert r.json()["errors"][0]["field"] == field, r.json()
    assert session.scalar(select(func.count()).select_from(Intent)) == 0


def test_tenant_scope(client: TestClient, session: Session, op: dict[str, str], world: dict[str, Any]) -> None:
    as_b = integrator_key(client, session, op, ["read", "write", "deploy"], world["tenant_b"])
    # tenant B's key naming tenant A's UE: refused, naming the UE; nothing stored
    r = client.post("/api/v1/intents", json=native(7), headers=as_b)
    assert r.status_code == 422 and imsi(5001007) in r.json()["detail"], r.text
    r = client.post("/api/v1/intents", json={"operation": "insert", "ue": "10.45.0.7", "lane": 6}, headers=as_b)
    assert r.status_code == 422 and "10.45.0.7" in r.json()["detail"]
    r = client.post(
        "/api/v1/intents",
        json={"operation": "insert", "ue": "10.46.0.7", "lane": 6, "slice_ref": world["slice_a"]},
        headers=as_b,
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "slice_ref"
    # its own UE: fine (slice B has no backend: nothing to push)
    mine = client.post("/api/v1/intents", json={"operation": "insert", "ue": "10.46.0.7", "lane": 6}, headers=as_b)
    assert mine.status_code == 201, mine.text
    assert mine.json()["intents"][0]["slice_id"] == world["slice_b"] and mine.json()["deployments"] == []
    theirs = client.post("/api/v1/intents", json=native(7), headers=op).json()["intents"][0]["id"]
    # B sees only its own
    listed = client.get("/api/v1/intents", headers=as_b).json()
    assert listed["count"] == 1 and listed["data"][0]["tenant_id"] == world["tenant_b"]
    assert client.get(f"/api/v1/intents/{theirs}", headers=as_b).status_code == 404
    assert client.delete(f"/api/v1/intents/{theirs}", headers=as_b).status_code == 404
    assert client.get("/api/v1/intents", headers=op).json()["count"] == 2


def test_listing1_insert_and_delete(client: TestClient, op: dict[str, str], world: dict[str, Any]) -> None:
    intent = {
        "Resources": [
            {"resourceId": "F8A4C949", "encapsulationID1": f"{5001:08X}", "encapsulationType1": "vxlan"},
            {"resourceId": "B6E6B2B3", "encapsulationID2": f"{5001 * 1000 + 2:08X}", "encapsulationType2": "gtp"},
            {"resourceId": "5A07C580", "srcIP": "10.45.0.2", "dstPort": "6000"},
        ],
        "Action": {"actionType": "INSERT", "actionName": "PRIO-QUEUE", "flow_hash": "E918D704", "rx_queue": "6"},
        "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}],
    }
    r = client.post("/api/v1/intents", json=intent, headers=op)
    assert r.status_code == 201, r.text
    (it,) = r.json()["intents"]
    assert it["source_format"] == "listing1" and it["action"]["lane"] == 6
    assert it["match"]["teids"] == [5001 * 1000 + 2] and it["match"]["ue_prefixes"] == ["10.45.0.2/32"]
    # P4 keys on the TEID: the entry is that tunnel of that UE, port 6000 exactly
    (entries,) = client.get(f"/api/v1/intents/{it['id']}", headers=op).json()["entries"]
    (rule,) = entries["rules"]
    assert rule["match"]["teid"]["value"] == 5001 * 1000 + 2 and rule["match"]["dst_port"]["value"] == 6000
    # the slice's services are untouched (an intent is not a slice-wide service class)
    assert len(client.get(f"/api/v1/slices/{world['slice_a']}/services", headers=op).json()) == 4
    deleted = client.post(
        "/api/v1/intents", json={**intent, "Action": {**intent["Action"], "actionType": "DELETE"}}, headers=op
    )
    assert deleted.status_code == 201 and deleted.json()["operation"] == "delete"
    assert client.get("/api/v1/intents", headers=op).json()["count"] == 0


def test_prefix_spanning_two_slices_needs_slice_ref(
    client: TestClient, op: dict[str, str], world: dict[str, Any]
) -> None:
    add_slice(client, op, world["tenant_a"], "iot", backend_ids=[])
    import_subscribers(client, op, [f"{imsi(5001999)},10.45.0.200,5001999,mvno-a,iot"])
    wide = {"operation": "insert", "ue": "10.45.0.0/24", "dst_ports": [[5000, 5007]], "lane": 6}
    r = client.post("/api/v1/intents", json=wide, headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "slice_ref", r.text
    r = client.post("/api/v1/intents", json={**wide, "slice_ref": world["slice_a"]}, headers=op)
    assert r.status_code == 201, r.text
    # the entries cover slice A's 100 UEs only (10.45.0.0-99), never iot's 10.45.0.200
    (entries,) = client.get(f"/api/v1/intents/{r.json()['intents'][0]['id']}", headers=op).json()["entries"]
    covered = {(e["match"]["src_ip"]["value"], e["match"]["src_ip"]["mask"]) for e in entries["rules"]}
    ue200 = (10 << 24) | (45 << 16) | 200
    assert covered and not any(ue200 & m == v for v, m in covered)
    assert all(any(((10 << 24) | (45 << 16) | u) & m == v for v, m in covered) for u in range(UES))
    # a single UE outside the slice named: refused, naming it
    r = client.post(
        "/api/v1/intents",
        json={"operation": "insert", "ue": "10.45.0.200", "lane": 6, "slice_ref": world["slice_a"]},
        headers=op,
    )
    assert r.status_code == 422 and "10.45.0.200" in r.json()["detail"]


def test_concurrent_retries_with_one_key_make_one_intent(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, Any]
) -> None:
    from concurrent.futures import ThreadPoolExecutor

    key = {**op, "Idempotency-Key": "race-1"}
    with ThreadPoolExecutor(max_workers=3) as pool:
        answers = list(pool.map(lambda _: client.post("/api/v1/intents", json=native(11), headers=key), range(3)))
    assert [a.status_code for a in answers] == [201, 201, 201], [a.text for a in answers]
    assert len({a.json()["intents"][0]["id"] for a in answers}) == 1
    assert sum(a.headers.get("Idempotent-Replayed") == "true" for a in answers) == 2
    assert session.scalar(select(func.count()).select_from(Intent)) == 1
