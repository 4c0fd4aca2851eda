"""#29 point 6: every conflict of a tenant form in one answer, each naming its field."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import Tenant
from tests.factories import tenant_body


def test_duplicate_vni_vlan_and_overlapping_pool_together(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    first = client.post("/api/v1/tenants", json=tenant_body("red", 7, 70, ue_pool="10.50.0.0/16"), headers=op)
    assert first.status_code == 201
    r = client.post("/api/v1/tenants", json=tenant_body("red", 7, 70, ue_pool="10.50.3.0/24"), headers=op)
    assert r.status_code == 409, r.text
    assert [e["field"] for e in r.json()["errors"]] == ["name", "vni", "vlan", "ue_pool"]
    assert session.scalar(select(func.count()).select_from(Tenant)) == 1
    # a change the same: all at once, nothing changed
    blue = client.post("/api/v1/tenants", json=tenant_body("blue", 8, 80), headers=op).json()
    r = client.patch(
        f"/api/v1/tenants/{blue['id']}",
        json={"vni": 7, "vlan": 70, "ue_pool": "10.50.0.0/24", "version": 1},
        headers=op,
    )
    assert r.status_code == 409 and [e["field"] for e in r.json()["errors"]] == ["vni", "vlan", "ue_pool"]
    assert client.get(f"/api/v1/tenants/{blue['id']}", headers=op).json()["vni"] == 8
    # one clash alone keeps its own title; a tenant's own values are no clash
    r = client.patch(f"/api/v1/tenants/{blue['id']}", json={"ue_pool": "10.50.0.0/24", "version": 1}, headers=op)
    assert r.status_code == 409 and r.json()["title"] == "UE pool overlaps another tenant's"
    r = client.patch(f"/api/v1/tenants/{first.json()['id']}", json={"vni": 7, "vlan": 70, "version": 1}, headers=op)
    assert r.status_code == 200, r.text
