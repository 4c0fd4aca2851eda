"""Deleting a slice or a backend while the other depends on it is refused with the reason."""

from __future__ import annotations

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import Backend, Role, ServiceClass, Slice
from sliceportal_testbed.processes import free_port
from tests.factories import login, make_user, slice_type_id, tenant_body


@pytest.fixture
def op(client: TestClient, session: Session) -> dict[str, str]:
    make_user(session, "op", Role.OPERATOR)
    return login(client, "op")


def test_slice_and_backend_deletes_name_what_depends(client: TestClient, session: Session, op: dict[str, str]) -> None:
    # a backend whose data plane is not running: registering and deleting need no data plane
    b = client.post(
        "/api/v1/backends",
        json={"name": "edge-1", "driver": "p4rt", "options": {"address": f"127.0.0.1:{free_port()}"}},
        headers=op,
    )
    assert b.status_code == 201, b.text
    bid = b.json()["id"]
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    s = client.post(
        "/api/v1/slices",
        json={
            "name": "embb",
            "tenant_id": t,
            "slice_type_id": slice_type_id(client, op, "Flexible Slice"),
            "services": [{"name": "q0", "lane": 0, "dst_ports": [{"lo": 5000, "hi": 5007}]}],
            "backend_ids": [bid],
        },
        headers=op,
    )
    assert s.status_code == 201, s.text
    sid = s.json()["id"]

    r = client.delete(f"/api/v1/backends/{bid}", headers=op)
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "slices"
    assert r.json()["detail"] == "slices embb are assigned to backend edge-1: remove it from them first"
    r = client.delete(f"/api/v1/slices/{sid}", headers=op)
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "backend_ids"
    assert "assigned to backends edge-1" in r.json()["detail"]
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(Slice)) == 1
    assert session.scalar(select(func.count()).select_from(Backend)) == 1

    # force: the slice goes with its services; then the backend is free to go
    assert client.delete(f"/api/v1/slices/{sid}", params={"force": "true"}, headers=op).status_code == 204
    session.expire_all()
    assert session.scalar(select(func.count()).select_from(ServiceClass)) == 0
    assert client.delete(f"/api/v1/backends/{bid}", headers=op).status_code == 204
