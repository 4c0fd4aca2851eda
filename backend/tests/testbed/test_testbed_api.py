"""The testbed API without a testbed (no root needed): operators get a clear 409, others
403, bad input 422 naming the field — and nothing starts."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.models import Role
from tests.factories import login, make_user


def test_testbed_routes_without_a_testbed(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    make_user(session, "integ", Role.INTEGRATOR)
    op, integ = login(client, "op"), login(client, "integ")
    r = client.get("/api/v1/testbed", headers=op)
    assert r.status_code == 409 and r.headers["content-type"].startswith("application/problem+json")
    assert "no emulated testbed runs" in r.json()["detail"]
    r = client.post("/api/v1/testbed/congestion", json={"backend_id": 1, "duration_s": 10}, headers=op)
    assert r.status_code == 409
    assert client.get("/api/v1/testbed", headers=integ).status_code == 403
    assert (
        client.post("/api/v1/testbed/congestion", json={"backend_id": 1, "duration_s": 10}, headers=integ).status_code
        == 403
    )
    assert client.delete("/api/v1/testbed/congestion/1", headers=op).status_code == 409
    assert client.delete("/api/v1/testbed/congestion/1", headers=integ).status_code == 403
    r = client.post("/api/v1/testbed/congestion", json={"backend_id": 1, "duration_s": 601, "factor": 0.5}, headers=op)
    assert r.status_code == 422
    fields = {e["field"] for e in r.json()["errors"]}
    assert any("duration_s" in f for f in fields) and any("factor" in f for f in fields), fields
    assert client.get("/api/v1/testbed").status_code == 401
