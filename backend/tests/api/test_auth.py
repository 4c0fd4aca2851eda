"""Authentication, roles, tenant isolation, API keys, rate limiting."""

from __future__ import annotations

import re

from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models import ApiKey, Role, User
from tests.factories import PASSWORD, login, make_user, slice_type_id, tenant_body

OPEN = {"/api/v1/health", "/api/v1/login/access-token", "/api/v1/login/refresh", "/api/v1/login/logout"}


def test_every_route_but_login_and_health_needs_a_token(client: TestClient) -> None:
    spec = client.get("/api/v1/openapi.json").json()
    checked = 0
    for path, ops in spec["paths"].items():
        if path in OPEN:
            continue
        concrete = re.sub(r"\{[^}]+\}", "1", path)
        for method in ops:
            r = client.request(method.upper(), concrete)
            assert r.status_code == 401, (method, path, r.status_code)
            assert r.headers["content-type"].startswith("application/problem+json")
            checked += 1
    assert checked > 20


def test_passwords_are_argon2_hashed(session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    stored = session.scalar(select(User.password_hash).where(User.username == "op"))
    assert stored is not None and stored.startswith("$argon2") and PASSWORD not in stored


def _two_tenants(client: TestClient, session: Session) -> tuple[dict[str, str], int, int, int]:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    a = client.post("/api/v1/tenants", json=tenant_body("a", 11, 101), headers=op).json()["id"]
    b = client.post("/api/v1/tenants", json=tenant_body("b", 12, 102), headers=op).json()["id"]
    st = slice_type_id(client, op, "Best Effort")
    slice_b = client.post(
        "/api/v1/slices", json={"name": "b1", "tenant_id": b, "slice_type_id": st}, headers=op
    ).json()["id"]
    return op, a, b, slice_b


def test_tenant_sees_only_its_own_objects(client: TestClient, session: Session) -> None:
    op, a, b, slice_b = _two_tenants(client, session)
    st = slice_type_id(client, op, "Low Latency")
    slice_a = client.post(
        "/api/v1/slices", json={"name": "a1", "tenant_id": a, "slice_type_id": st}, headers=op
    ).json()["id"]
    make_user(session, "viewer-a", Role.TENANT, tenant_id=a)
    ta = login(client, "viewer-a")
    assert client.get(f"/api/v1/slices/{slice_b}", headers=ta).status_code == 404
    assert client.get(f"/api/v1/tenants/{b}", headers=ta).status_code == 404
    assert client.get(f"/api/v1/slices/{slice_a}", headers=ta).status_code == 200
    listed = client.get("/api/v1/slices", headers=ta).json()
    assert [s["id"] for s in listed["data"]] == [slice_a] and listed["count"] == 1
    assert [t["id"] for t in client.get("/api/v1/tenants", headers=ta).json()["data"]] == [a]
    # explicitly filtering on the other tenant finds nothing rather than leaking
    assert client.get("/api/v1/slices", params={"tenant_id": b}, headers=ta).json()["count"] == 0
    # tenants read; they do not write, and operator-only collections are closed
    assert client.delete(f"/api/v1/slices/{slice_a}", headers=ta).status_code == 403
    assert client.get("/api/v1/backends", headers=ta).status_code == 403
    assert client.get("/api/v1/audit", headers=ta).status_code == 403


def test_integrator_key_scopes(client: TestClient, session: Session) -> None:
    op = _two_tenants(client, session)[0]
    integ = make_user(session, "integ", Role.INTEGRATOR)
    it = login(client, "integ")
    created = client.post("/api/v1/api-keys", json={"name": "ro", "scopes": ["read"]}, headers=it)
    assert created.status_code == 201
    secret = created.json()["secret"]
    # the key is stored hashed; the secret is not retrievable again
    stored = session.scalar(select(ApiKey).where(ApiKey.prefix == created.json()["prefix"]))
    assert stored is not None and secret not in stored.key_hash
    assert "secret" not in client.get("/api/v1/api-keys", headers=it).json()[0]
    ro = {"X-API-Key": secret}
    assert client.get("/api/v1/tenants", headers=ro).status_code == 200
    r = client.post("/api/v1/tenants", json=tenant_body("c", 13, 103), headers=ro)
    assert r.status_code == 403 and "write" in r.json()["detail"]
    # an integrator's login reads only, so its own keys do (#27); an operator grants more
    r = client.post("/api/v1/api-keys", json={"name": "rw", "scopes": ["read", "write"]}, headers=it)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "scopes", r.text
    rw = client.post(
        "/api/v1/api-keys", json={"name": "rw", "scopes": ["read", "write"], "user_id": integ.id}, headers=op
    ).json()
    assert rw["user_id"] == integ.id
    assert (
        client.post(
            "/api/v1/tenants", json=tenant_body("c", 13, 103), headers={"Authorization": f"Bearer {rw['secret']}"}
        ).status_code
        == 201
    )
    # revoked keys stop working at once
    assert client.delete(f"/api/v1/api-keys/{rw['id']}", headers=it).status_code == 204
    assert client.get("/api/v1/tenants", headers={"X-API-Key": rw["secret"]}).status_code == 401
    # a key cannot mint keys
    assert client.post("/api/v1/api-keys", json={"name": "x", "scopes": ["read"]}, headers=ro).status_code == 403


def test_failed_logins_are_rate_limited(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    for _ in range(3):  # settings fixture: login_max_failures=3
        r = client.post("/api/v1/login/access-token", data={"username": "op", "password": "wrong password"})
        assert r.status_code == 401
    r = client.post("/api/v1/login/access-token", data={"username": "op", "password": PASSWORD})
    assert r.status_code == 429 and "Retry-After" in r.headers


def test_refresh_tokens_rotate(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    tokens = client.post("/api/v1/login/access-token", data={"username": "op", "password": PASSWORD}).json()
    fresh = client.post("/api/v1/login/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert fresh.status_code == 200
    assert (
        client.get("/api/v1/users/me", headers={"Authorization": f"Bearer {fresh.json()['access_token']}"}).json()[
            "username"
        ]
        == "op"
    )
    again = client.post("/api/v1/login/refresh", json={"refresh_token": tokens["refresh_token"]})
    assert again.status_code == 401  # a refresh token works once
    client.post("/api/v1/login/logout", json={"refresh_token": fresh.json()["refresh_token"]})
    assert (
        client.post("/api/v1/login/refresh", json={"refresh_token": fresh.json()["refresh_token"]}).status_code == 401
    )


def test_tampered_token_is_refused(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    headers = login(client, "op")
    bad = {"Authorization": headers["Authorization"][:-2] + "xx"}
    assert client.get("/api/v1/tenants", headers=bad).status_code == 401
