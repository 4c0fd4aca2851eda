"""#27: a key never carries more than its creator may grant; a new password revokes the keys."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import ApiKey, Role
from tests.factories import login, make_user, tenant_body

NEW_PASSWORD = "a fresh long passphrase 42"


def test_keys_carry_at_most_the_creators_grant(client: TestClient, session: Session) -> None:
    op = login(client, make_user(session, "op", Role.OPERATOR).username)
    integ = make_user(session, "integ", Role.INTEGRATOR)
    tenant = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    viewer = make_user(session, "viewer", Role.TENANT, tenant_id=tenant)
    it = login(client, "integ")
    # the integrator's login reads only: so does every key it makes itself
    for scopes in (["read", "write"], ["deploy"]):
        r = client.post("/api/v1/api-keys", json={"name": "mine", "scopes": scopes}, headers=it)
        assert r.status_code == 422 and [e["field"] for e in r.json()["errors"]] == ["scopes"], r.text
    assert client.post("/api/v1/api-keys", json={"name": "ro", "scopes": ["read"]}, headers=it).status_code == 201
    # nor for someone else
    r = client.post("/api/v1/api-keys", json={"name": "x", "scopes": ["read"], "user_id": viewer.id}, headers=it)
    assert r.status_code == 403
    # an operator grants an integrator more; a tenant user's key reads at most
    r = client.post(
        "/api/v1/api-keys", json={"name": "rw", "scopes": ["read", "write"], "user_id": integ.id}, headers=op
    )
    assert r.status_code == 201 and r.json()["user_id"] == integ.id, r.text
    rw = {"X-API-Key": r.json()["secret"]}
    assert client.post("/api/v1/tenants", json=tenant_body("b", 12, 102), headers=rw).status_code == 201
    r = client.post("/api/v1/api-keys", json={"name": "t", "scopes": ["write"], "user_id": viewer.id}, headers=op)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "scopes"
    assert session.scalar(select(func.count()).select_from(ApiKey)) == 2


def test_a_new_password_revokes_the_users_keys(client: TestClient, session: Session) -> None:
    op = login(client, make_user(session, "op", Role.OPERATOR).username)
    integ = make_user(session, "integ", Role.INTEGRATOR)
    secrets = [
        client.post(
            "/api/v1/api-keys", json={"name": f"k{i}", "scopes": ["read"], "user_id": integ.id}, headers=op
        ).json()["secret"]
        for i in range(2)
    ]
    assert all(client.get("/api/v1/tenants", headers={"X-API-Key": s}).status_code == 200 for s in secrets)
    # a change of name only keeps them
    r = client.patch(f"/api/v1/users/{integ.id}", json={"full_name": "Integ Ration", "version": 1}, headers=op)
    assert r.status_code == 200 and r.json()["api_keys_revoked"] == 0, r.text
    r = client.patch(f"/api/v1/users/{integ.id}", json={"password": NEW_PASSWORD, "version": 2}, headers=op)
    assert r.status_code == 200 and r.json()["api_keys_revoked"] == 2, r.text
    assert all(client.get("/api/v1/tenants", headers={"X-API-Key": s}).status_code == 401 for s in secrets)
    listed = client.get("/api/v1/api-keys", params={"all_users": True}, headers=op).json()
    assert [k["revoked_at"] is not None for k in listed] == [True, True]
