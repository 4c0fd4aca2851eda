"""Finding 7: each former 500 / silent acceptance, now a 4xx naming the field."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import AuditLog, Role, Tenant, User
from sliceportal.services.bootstrap_data import create_demo_accounts, seed_demo
from tests.factories import integrator_key, login, make_user, slice_type_id, tenant_body


def _fields(r: Any) -> list[str]:
    return [e["field"] for e in r.json().get("errors", [])]


def test_naive_datetimes_are_422(client: TestClient, op: dict[str, str]) -> None:
    tenant = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    st = slice_type_id(client, op, "Best Effort")
    sl = client.post("/api/v1/slices", json={"name": "s", "tenant_id": tenant, "slice_type_id": st}, headers=op)
    r = client.get(f"/api/v1/slices/{sl.json()['id']}/kpis", params={"since": "2020-01-01T00:00:00"}, headers=op)
    assert r.status_code == 422 and _fields(r) == ["query.since"], r.text
    r = client.get(f"/api/v1/slices/{sl.json()['id']}/kpis", params={"since": "2020-01-01T00:00:00Z"}, headers=op)
    assert r.status_code == 200


def test_if_match_must_agree_with_the_body_and_guards_delete(client: TestClient, op: dict[str, str]) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()
    r = client.patch(
        f"/api/v1/tenants/{t['id']}", json={"description": "x", "version": 7}, headers={**op, "If-Match": '"1"'}
    )
    assert r.status_code == 422 and _fields(r) == ["version"]
    assert (
        client.patch(
            f"/api/v1/tenants/{t['id']}", json={"description": "x", "version": 1}, headers={**op, "If-Match": '"1"'}
        ).status_code
        == 200
    )
    r = client.delete(f"/api/v1/tenants/{t['id']}", headers={**op, "If-Match": '"1"'})  # now at version 2
    assert r.status_code == 412
    assert client.get(f"/api/v1/tenants/{t['id']}", headers=op).status_code == 200
    assert client.delete(f"/api/v1/tenants/{t['id']}", headers={**op, "If-Match": '"2"'}).status_code == 204


@pytest.mark.parametrize("password", [" " * 10, "1234567890", "password1234", "short"])
def test_weak_passwords_are_refused(client: TestClient, op: dict[str, str], password: str) -> None:
    r = client.post("/api/v1/users", json={"username": "bob", "password": password, "role": "integrator"}, headers=op)
    assert r.status_code == 422 and _fields(r) == ["password"], r.text


@pytest.mark.parametrize("name", ["", "   ", "evil\u202etxt.exe", "zero\u200bwidth", "tab\there"])
def test_deceptive_or_blank_names_are_refused(client: TestClient, op: dict[str, str], name: str) -> None:
    r = client.post("/api/v1/tenants", json=tenant_body(name=name), headers=op)
    assert r.status_code == 422 and _fields(r) == ["name"], r.text


def test_names_are_stripped_and_user_names_unique_regardless_of_case(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    r = client.post("/api/v1/tenants", json=tenant_body(name="  spaced  "), headers=op)
    assert r.status_code == 201 and r.json()["name"] == "spaced"
    r = client.post(
        "/api/v1/users",
        json={"username": "OP", "password": "a new long passphrase 42", "role": "integrator"},
        headers=op,
    )
    assert r.status_code == 409 and _fields(r) == ["username"]


@pytest.mark.parametrize(("body", "field"), [({"vlan": True}, "vlan"), ({"vni": 5.0}, "vni"), ({"vni": "7"}, "vni")])
def test_no_bool_or_float_as_int(client: TestClient, op: dict[str, str], body: dict[str, Any], field: str) -> None:
    r = client.post("/api/v1/tenants", json={**tenant_body(), **body}, headers=op)
    assert r.status_code == 422 and _fields(r) == [field], r.text


def test_float_ids_are_refused(client: TestClient, op: dict[str, str]) -> None:
    tenant = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    r = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": float(tenant), "imsi": "001010000000001", "ue_ip": "10.45.0.1"},
        headers=op,
    )
    assert r.status_code == 422 and _fields(r) == ["tenant_id"]


def test_unknown_csv_columns_are_named(client: TestClient, op: dict[str, str]) -> None:
    client.post("/api/v1/tenants", json=tenant_body(), headers=op)
    csv = "imsi,ue_ip,teid,tenant\n001010000000001,10.45.0.1,5,mvno-a\n"
    r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv, "text/csv")}, headers=op)
    assert r.status_code == 422 and _fields(r) == ["teid"] and "teids" in r.json()["detail"]


def test_expensive_endpoints_are_rate_limited_per_principal(db_url: str, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    make_user(session, "op2", Role.OPERATOR)
    settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, rate_limit_expensive="3/minute")
    with TestClient(create_app(settings, db_url)) as c:
        op, op2 = login(c, "op"), login(c, "op2")
        preview = "/api/v1/backends/{}/preview"
        # the budget is per user across backends (no backend exists: 404 after the count)
        statuses = [c.get(preview.format(n), headers=op).status_code for n in (1, 2, 3, 4)]
        assert statuses == [404, 404, 404, 429]
        r = c.get(preview.format(5), headers=op)
        assert r.status_code == 429 and 1 <= int(r.headers["retry-after"]) <= 60
        assert c.get(preview.format(1), headers=op2).status_code == 404  # another principal's budget
        assert c.get(preview.format(1)).status_code == 401  # unauthenticated: refused, not counted
        csv = {"file": ("s.csv", "imsi,ue_ip,tenant\n", "text/csv")}
        assert c.post("/api/v1/subscribers/import", files=csv, headers=op).status_code != 429  # its own budget


def test_operator_revokes_anyones_key(client: TestClient, session: Session, op: dict[str, str]) -> None:
    make_user(session, "integ", Role.INTEGRATOR)
    it = login(client, "integ")
    key = client.post("/api/v1/api-keys", json={"name": "k", "scopes": ["read"]}, headers=it).json()
    assert [k["id"] for k in client.get("/api/v1/api-keys", params={"all_users": True}, headers=op).json()] == [
        key["id"]
    ]
    assert client.delete(f"/api/v1/api-keys/{key['id']}", headers=op).status_code == 204
    assert client.get("/api/v1/tenants", headers={"X-API-Key": key["secret"]}).status_code == 401


def test_tenant_deletion_with_users_needs_force_and_is_audited(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()
    make_user(session, "viewer", Role.TENANT, tenant_id=t["id"])
    r = client.delete(f"/api/v1/tenants/{t['id']}", headers=op)
    assert r.status_code == 409 and "1 users" in r.json()["detail"] and _fields(r) == ["force"]
    assert session.scalar(select(func.count()).select_from(User).where(User.username == "viewer")) == 1
    assert client.delete(f"/api/v1/tenants/{t['id']}", params={"force": True}, headers=op).status_code == 204
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(User).where(User.username == "viewer")) == 0
    actions = set(session.scalars(select(AuditLog.action).where(AuditLog.tenant_id == t["id"])))
    assert "tenant_force_delete" in actions


def test_integrator_key_bound_to_one_tenant(client: TestClient, session: Session, op: dict[str, str]) -> None:
    a = client.post("/api/v1/tenants", json=tenant_body("a", 11, 101), headers=op).json()["id"]
    b = client.post("/api/v1/tenants", json=tenant_body("b", 12, 102), headers=op).json()["id"]
    k = integrator_key(client, session, op, ["read", "write"], a, "integ")
    assert [t["id"] for t in client.get("/api/v1/tenants", headers=k).json()["data"]] == [a]
    assert client.get(f"/api/v1/tenants/{b}", headers=k).status_code == 404
    sub = {"imsi": "001010000000001", "ue_ip": "10.45.0.1"}
    assert client.post("/api/v1/subscribers", json={**sub, "tenant_id": b}, headers=k).status_code == 422
    assert client.post("/api/v1/subscribers", json={**sub, "tenant_id": a}, headers=k).status_code == 201
    assert client.post("/api/v1/tenants", json=tenant_body("c", 13, 103), headers=k).status_code == 403
    assert client.get("/api/v1/backends", headers=k).status_code == 403


def test_demo_accounts_only_when_asked_with_random_passwords(session: Session) -> None:
    assert seed_demo(session, users_per_slice=1)
    assert session.scalar(select(func.count()).select_from(User)) == 0  # demo data, no accounts
    created = create_demo_accounts(session)
    assert {u for u, _ in created} == {f"{t}-viewer" for t in session.scalars(select(Tenant.name))}
    assert all(len(p) >= 16 and "demo-pass" not in p for _, p in created)
    assert create_demo_accounts(session) == []  # once
