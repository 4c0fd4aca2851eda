"""Deleting a slice or a backend while the other depends on it is refused with the reason."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import Backend, ServiceClass, Slice
from sliceportal_testbed.processes import free_port
from tests.factories import add_backend, add_slice, add_tenant


def test_slice_and_backend_deletes_name_what_depends(client: TestClient, session: Session, op: dict[str, str]) -> None:
    # a backend whose data plane is not running: registering and deleting need no data plane
    bid = add_backend(client, op, "edge-1", {"address": f"127.0.0.1:{free_port()}"})["id"]
    services = [{"name": "q0", "lane": 0, "dst_ports": [{"lo": 5000, "hi": 5007}]}]
    sid = add_slice(client, op, add_tenant(client, op), services=services, backend_ids=[bid])

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
