"""#27: a key bound to tenant A learns nothing of tenant B from uniqueness conflicts.

An IMSI names one UE in the whole deployment, so a tenant must be told that an IMSI is taken
-- but not by which subscriber of which tenant. Operators still get the details.
"""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import Subscriber
from tests.factories import tenant_body

BLUE = "mvno-blue"


@pytest.fixture
def world(client: TestClient, op: dict[str, str]) -> dict[str, object]:
    a = client.post("/api/v1/tenants", json=tenant_body("mvno-a", 11, 101), headers=op).json()["id"]
    b = client.post("/api/v1/tenants", json=tenant_body(BLUE, 12, 102), headers=op).json()["id"]
    csv = "imsi,ue_ip,tenant\n" + "".join(f"0010100000009{i:02d},10.99.0.{i + 1},{BLUE}\n" for i in range(32))
    r = client.post("/api/v1/subscribers/import", files={"file": ("b.csv", csv.encode(), "text/csv")}, headers=op)
    assert r.status_code == 201, r.text
    key = client.post(
        "/api/v1/api-keys", json={"name": "a-only", "scopes": ["read", "write"], "tenant_id": a}, headers=op
    )
    assert key.status_code == 201, key.text
    ids = [s["id"] for s in client.get("/api/v1/subscribers", params={"limit": 100}, headers=op).json()["data"]]
    return {"a": a, "b": b, "key": {"X-API-Key": key.json()["secret"]}, "b_ids": ids}


def _leaks(text: str, world: dict[str, object]) -> list[str]:
    """Another tenant's identities found in ``text``: its name, id, its subscribers' ids."""
    found = [BLUE] if BLUE in text else []
    ids = world["b_ids"]
    assert isinstance(ids, list)
    found += [f"subscriber {i}" for i in ids if f"subscriber {i}" in text]
    return found + (["tenant id"] if f"tenant {world['b']}" in text else [])


def test_create_with_another_tenants_imsi(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, object]
) -> None:
    body = {"imsi": "001010000000905", "ue_ip": "10.45.0.9", "tenant_id": world["a"]}
    r = client.post("/api/v1/subscribers", json=body, headers=world["key"])  # type: ignore[arg-type]
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "imsi", r.text
    assert "already in use" in r.json()["detail"]
    assert _leaks(r.text, world) == [], r.text
    # the operator sees whose it is
    r = client.post("/api/v1/subscribers", json=body, headers=op)
    assert r.status_code == 409 and BLUE in r.json()["detail"]
    # the same on a change of IMSI
    mine = client.post("/api/v1/subscribers", json={**body, "imsi": "001010000000001"}, headers=world["key"]).json()  # type: ignore[arg-type]
    r = client.patch(
        f"/api/v1/subscribers/{mine['id']}", json={"imsi": "001010000000931", "version": 1}, headers=world["key"]
    )  # type: ignore[arg-type]
    assert r.status_code == 409 and _leaks(r.text, world) == [], r.text
    assert session.scalar(select(func.count()).select_from(Subscriber)) == 33


def test_import_of_candidate_imsis(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, object]
) -> None:
    # 1 000 candidate IMSIs: the answer says which are taken, never whose
    csv = "imsi,ue_ip,tenant\n" + "".join(
        f"0010100000{i:05d},10.45.{i // 250}.{i % 250 + 1},mvno-a\n" for i in range(1000)
    )
    r = client.post(
        "/api/v1/subscribers/import", files={"file": ("a.csv", csv.encode(), "text/csv")}, headers=world["key"]
    )  # type: ignore[arg-type]
    assert r.status_code == 422, r.text
    errors = r.json()["errors"]
    assert len(errors) == 32 and {e["field"] for e in errors} == {"imsi"}
    assert all("is already in use" in e["message"] for e in errors), errors[0]
    assert _leaks(r.text, world) == [], r.text[:500]
    r = client.post("/api/v1/subscribers/import", files={"file": ("a.csv", csv.encode(), "text/csv")}, headers=op)
    assert r.status_code == 422 and all(BLUE in e["message"] for e in r.json()["errors"])
    assert session.scalar(select(func.count()).select_from(Subscriber)) == 32
