"""The generic resource contract: CRUD, paging, sorting, search, versions, audit."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog
from tests.factories import slice_type_id, tenant_body


def test_tenant_crud_with_versions_and_audit(client: TestClient, session: Session, op: dict[str, str]) -> None:
    r = client.post("/api/v1/tenants", json=tenant_body(), headers=op)
    assert r.status_code == 201 and r.headers["ETag"] == '"1"'
    tid = r.json()["id"]
    # an update must say which version it was based on
    assert client.patch(f"/api/v1/tenants/{tid}", json={"contact": "x"}, headers=op).status_code == 428
    ok = client.patch(f"/api/v1/tenants/{tid}", json={"contact": "noc@a", "version": 1}, headers=op)
    assert ok.status_code == 200 and ok.json()["version"] == 2 and ok.headers["ETag"] == '"2"'
    # a second operator working from version 1 cannot silently overwrite
    stale = client.patch(f"/api/v1/tenants/{tid}", json={"contact": "other"}, headers={**op, "If-Match": '"1"'})
    assert stale.status_code == 412 and stale.json()["errors"][0]["field"] == "version"
    assert client.get(f"/api/v1/tenants/{tid}", headers=op).json()["contact"] == "noc@a"
    assert client.patch(f"/api/v1/tenants/{tid}", json={"name": None, "version": 2}, headers=op).status_code == 422
    assert client.delete(f"/api/v1/tenants/{tid}", headers=op).status_code == 204
    assert client.get(f"/api/v1/tenants/{tid}", headers=op).status_code == 404
    trail = session.scalars(select(AuditLog).where(AuditLog.object_type == "tenant").order_by(AuditLog.id)).all()
    assert [a.action for a in trail] == ["create", "update", "delete"]
    assert trail[1].before is not None and trail[1].after is not None
    assert trail[1].before["contact"] == "" and trail[1].after["contact"] == "noc@a"
    assert all(a.actor == "op" and a.via == "token" for a in trail)


def test_paging_sorting_search(client: TestClient, op: dict[str, str]) -> None:
    for i in range(7):
        client.post("/api/v1/tenants", json=tenant_body(f"mvno-{i}", 100 + i, 200 + i), headers=op)
    p = client.get("/api/v1/tenants", params={"limit": 3, "offset": 3, "sort": "-vni"}, headers=op).json()
    assert p["count"] == 7 and [t["vni"] for t in p["data"]] == [103, 102, 101]
    assert client.get("/api/v1/tenants", params={"q": "mvno-5"}, headers=op).json()["count"] == 1
    bad = client.get("/api/v1/tenants", params={"sort": "password"}, headers=op)
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "sort"
    assert client.get("/api/v1/tenants", params={"limit": 0}, headers=op).status_code == 422


def test_slice_with_services_and_subscribers(client: TestClient, op: dict[str, str]) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    st = slice_type_id(client, op, "Flexible Slice")
    body = {
        "name": "embb",
        "tenant_id": t,
        "slice_type_id": st,
        "sla": {"rate_limit_mbps": 48, "max_delay_ms": 20, "ecn_delay_ms": 5},
        "services": [
            {"name": "be", "lane": 0, "dst_ports": [{"lo": 5000, "hi": 5006}]},
            {"name": "crit", "lane": 6, "dst_ports": [{"lo": 5024, "hi": 5030}], "dscp": [46]},
        ],
    }
    r = client.post("/api/v1/slices", json=body, headers=op)
    assert r.status_code == 201, r.text
    s = r.json()
    assert s["state"] == "draft" and s["lanes"] == [0, 2, 4, 6] and s["sla"]["rate_limit_mbps"] == 48
    assert [(c["name"], c["lane"], c["dst_ports"]) for c in s["services"]] == [
        ("be", 0, [{"lo": 5000, "hi": 5006}]),
        ("crit", 6, [{"lo": 5024, "hi": 5030}]),
    ]
    svc = client.post(f"/api/v1/slices/{s['id']}/services", json={"name": "ll", "lane": 4}, headers=op)
    assert svc.status_code == 201
    upd = client.patch(
        f"/api/v1/slices/{s['id']}/services/{svc.json()['id']}", json={"lane": 2, "version": 1}, headers=op
    )
    assert upd.status_code == 200 and upd.json()["lane"] == 2
    sub = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": t, "imsi": "001010000000001", "ue_ip": "10.45.0.1", "teids": [1], "slice_ids": [s["id"]]},
        headers=op,
    )
    assert sub.status_code == 201 and sub.json()["slice_ids"] == [s["id"]]
    assert client.get("/api/v1/subscribers", params={"slice_id": s["id"]}, headers=op).json()["count"] == 1
    assert client.get("/api/v1/subscribers", params={"q": "10.45.0.1"}, headers=op).json()["count"] == 1
    # SLA consistency is validated as a whole
    bad = client.patch(
        f"/api/v1/slices/{s['id']}", json={"sla": {"ecn_delay_ms": 50, "max_delay_ms": 20}, "version": 1}, headers=op
    )
    assert bad.status_code == 422


def test_a_slice_sla_patch_changes_only_the_fields_it_names(client: TestClient, op: dict[str, str]) -> None:
    """``PATCH /slices/{id}`` with ``sla`` is a JSON merge patch: the other SLA fields stay (it
    replaced the whole SLA, clearing them), null clears one, and the result is checked whole."""
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    sla = {"guaranteed_mbps": 10, "rate_limit_mbps": 48, "max_delay_ms": 20, "ecn_delay_ms": 5, "max_loss_pct": 1}
    body = {"name": "embb", "tenant_id": t, "slice_type_id": slice_type_id(client, op, "Flexible Slice"), "sla": sla}
    s = client.post("/api/v1/slices", json=body, headers=op).json()
    url = f"/api/v1/slices/{s['id']}"
    r = client.patch(url, json={"sla": {"rate_limit_mbps": 50}, "version": s["version"]}, headers=op)
    assert r.status_code == 200, r.text
    assert r.json()["sla"] == sla | {"rate_limit_mbps": 50, "max_jitter_ms": None}
    r = client.patch(url, json={"sla": {"max_loss_pct": None}, "version": r.json()["version"]}, headers=op)
    assert r.status_code == 200 and r.json()["sla"]["max_loss_pct"] is None and r.json()["sla"]["max_delay_ms"] == 20
    # consistent alone, not with what the slice keeps: refused, nothing changed
    version = r.json()["version"]
    bad = client.patch(url, json={"sla": {"guaranteed_mbps": 60}, "version": version}, headers=op)
    assert bad.status_code == 422, bad.text
    assert bad.json()["errors"][0]["field"] == "sla" and "rate_limit_mbps" in bad.json()["detail"]
    after = client.get(url, headers=op).json()
    assert after["version"] == version and after["sla"]["guaranteed_mbps"] == 10
