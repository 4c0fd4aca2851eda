"""Factories: users with known passwords, and API helpers that log them in."""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.core.security import hash_password
from sliceportal.models import Role, User

PASSWORD = "correct horse battery"


def make_user(session: Session, username: str, role: Role, tenant_id: int | None = None) -> User:
    user = User(username=username, password_hash=hash_password(PASSWORD), role=role, tenant_id=tenant_id)
    session.add(user)
    session.commit()
    return user


def login(client: TestClient, username: str, password: str = PASSWORD) -> dict[str, str]:
    r = client.post("/api/v1/login/access-token", data={"username": username, "password": password})
    assert r.status_code == 200, r.text
    return {"Authorization": f"Bearer {r.json()['access_token']}"}


def tenant_body(name: str = "mvno-a", vni: int = 5001, vlan: int | None = 100, **extra: Any) -> dict[str, Any]:
    return {"name": name, "vni": vni, "vlan": vlan, "ue_pool": "10.45.0.0/16", **extra}


def slice_type_id(client: TestClient, headers: dict[str, str], name: str) -> int:
    r = client.get("/api/v1/slice-types", params={"q": name, "limit": 100}, headers=headers)
    return next(t["id"] for t in r.json()["data"] if t["name"] == name)
