"""Bulk subscriber delete: the list's filter, a count to confirm, an empty filter refused, one audit row."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog, Role, Subscriber
from sliceportal.models.subscribers import subscriber_slice
from tests.factories import login, make_user, slice_type_id, tenant_body

URL = "/api/v1/subscribers/bulk-delete"


@pytest.fixture
def world(client: TestClient, session: Session) -> dict[str, Any]:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    ids = {}
    for name, vni, net in (("red", 1, "10.45"), ("blue", 2, "10.46")):
        t = client.post("/api/v1/tenants", json=tenant_body(name, vni, vni, ue_pool=f"{net}.0.0/16"), headers=op)
        ids[name] = t.json()["id"]
        s = client.post(
            "/api/v1/slices",
            json={
                "name": f"{name}-iot",
                "tenant_id": ids[name],
                "slice_type_id": slice_type_id(client, op, "Best Effort"),
            },
            headers=op,
        )
        ids[f"{name}-iot"] = s.json()["id"]
        # 10 UEs per tenant, the first 4 in the slice
        csv = "imsi,ue_ip,teids,tenant,slices\n" + "".join(
            f"0010{vni}{u:010d},{net}.{u // 5}.{u + 1},,{name},{f'{name}-iot' if u < 4 else ''}\n" for u in range(10)
        )
        r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")}, headers=op)
        assert r.status_code == 201, r.text
    return {"op": op, **ids}


def _count(session: Session) -> int:
    session.expire_all()
    return session.scalar(select(func.count()).select_from(Subscriber)) or 0


def test_deletes_what_the_filter_matches_and_audits_it(
    client: TestClient, session: Session, world: dict[str, Any]
) -> None:
    op = world["op"]
    listed = client.get("/api/v1/subscribers", params={"slice_id": world["red-iot"]}, headers=op).json()
    assert listed["count"] == 4
    r = client.post(URL, json={"slice_id": world["red-iot"], "expected_count": 4}, headers=op)
    assert r.status_code == 200, r.text
    assert r.json() == {"deleted": 4, "filter": {"slice_id": world["red-iot"], "all": False}}
    assert _count(session) == 16
    assert session.scalar(select(func.count()).select_from(subscriber_slice)) == 4  # blue's memberships remain
    audit = session.scalars(select(AuditLog).where(AuditLog.action == "bulk_delete")).one()
    assert audit.actor == "op" and audit.tenant_id is None and audit.before is not None
    assert audit.before["count"] == 4 and len(audit.before["imsis"]) == 4
    assert audit.before["filter"] == {"slice_id": world["red-iot"]}
    # search text, as the list's search box: IMSI or UE address contains it
    r = client.post(URL, json={"tenant_id": world["blue"], "q": "10.46.1."}, headers=op)
    assert r.json()["deleted"] == 5 and _count(session) == 11


def test_refusals_change_nothing(client: TestClient, session: Session, world: dict[str, Any]) -> None:
    op = world["op"]
    r = client.post(URL, json={}, headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "all"
    assert "empty filter" in r.json()["detail"]
    r = client.post(URL, json={"tenant_id": world["red"], "expected_count": 3}, headers=op)
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "expected_count"
    assert "matches 10 subscribers, not the 3 confirmed" in r.json()["detail"]
    assert client.post(URL, json={"q": ""}, headers=op).status_code == 422
    assert client.post(URL, json={"tenant": 1}, headers=op).status_code == 422
    assert _count(session) == 20
    assert not session.scalars(select(AuditLog).where(AuditLog.action == "bulk_delete")).all()
    # all=true is the explicit way to empty the table
    r = client.post(URL, json={"all": True, "expected_count": 20}, headers=op)
    assert r.json()["deleted"] == 20 and _count(session) == 0


def test_a_tenant_user_cannot_bulk_delete(client: TestClient, session: Session, world: dict[str, Any]) -> None:
    make_user(session, "red-viewer", Role.TENANT, tenant_id=world["red"])
    red = login(client, "red-viewer")
    assert client.post(URL, json={"all": True}, headers=red).status_code == 403
    assert _count(session) == 20
