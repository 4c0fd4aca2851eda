"""Bad input gets a problem naming the field, and changes nothing."""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog, Slice, Subscriber, Tenant
from tests.factories import slice_type_id, tenant_body


def _counts(session: Session) -> tuple[int, ...]:
    session.expire_all()
    return tuple(
        session.scalar(select(func.count()).select_from(m)) or 0 for m in (Tenant, Slice, Subscriber, AuditLog)
    )


def _assert_problem(r: Any, status: int, field: str) -> None:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    body = r.json()
    assert body["status"] == status and body["title"]
    assert field in [e["field"] for e in body["errors"]], body


def test_bad_cidr_names_the_field(client: TestClient, session: Session, op: dict[str, str]) -> None:
    before = _counts(session)
    r = client.post("/api/v1/tenants", json=tenant_body(ue_pool="10.45.0.0/33"), headers=op)
    _assert_problem(r, 422, "ue_pool")
    r = client.post("/api/v1/tenants", json=tenant_body(ue_pool="10.45.0.1/16"), headers=op)  # host bits set
    _assert_problem(r, 422, "ue_pool")
    assert _counts(session) == before


def test_unknown_slice_type_names_the_field(client: TestClient, session: Session, op: dict[str, str]) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    before = _counts(session)
    r = client.post("/api/v1/slices", json={"name": "s", "tenant_id": t, "slice_type_id": 999}, headers=op)
    _assert_problem(r, 422, "slice_type_id")
    assert _counts(session) == before


def test_service_lane_must_belong_to_the_slice_type(client: TestClient, session: Session, op: dict[str, str]) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    st = slice_type_id(client, op, "Flexible Slice")
    before = _counts(session)
    body = {
        "name": "s",
        "tenant_id": t,
        "slice_type_id": st,
        "services": [{"name": "ok", "lane": 2}, {"name": "bad", "lane": 3}],
    }
    _assert_problem(client.post("/api/v1/slices", json=body, headers=op), 422, "services.1.lane")
    assert _counts(session) == before


def test_duplicate_ue_ip_and_teid(client: TestClient, session: Session, op: dict[str, str]) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    first = {"tenant_id": t, "imsi": "001010000000001", "ue_ip": "10.45.0.1", "teids": [7]}
    assert client.post("/api/v1/subscribers", json=first, headers=op).status_code == 201
    before = _counts(session)
    dup_ip = {**first, "imsi": "001010000000002", "teids": [8]}
    _assert_problem(client.post("/api/v1/subscribers", json=dup_ip, headers=op), 409, "ue_ip")
    dup_teid = {**first, "imsi": "001010000000003", "ue_ip": "10.45.0.3"}
    _assert_problem(client.post("/api/v1/subscribers", json=dup_teid, headers=op), 409, "teids")
    outside = {**first, "imsi": "001010000000004", "ue_ip": "192.168.0.1", "teids": [9]}
    _assert_problem(client.post("/api/v1/subscribers", json=outside, headers=op), 422, "ue_ip")
    assert _counts(session) == before


@pytest.mark.parametrize(
    ("field", "value"),
    [
        ("imsi", "12345"),
        ("imsi", "00101000000000a"),
        ("ue_ip", "10.45.0.256"),
        ("teids", [0]),
        ("teids", [4_294_967_296]),
        ("teids", [5, 5]),
    ],
)
def test_subscriber_field_validation(
    client: TestClient, session: Session, op: dict[str, str], field: str, value: object
) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    body = {"tenant_id": t, "imsi": "001010000000001", "ue_ip": "10.45.0.1", field: value}
    before = _counts(session)
    r = client.post("/api/v1/subscribers", json=body, headers=op)
    assert r.status_code == 422
    assert any(e["field"].startswith(field) for e in r.json()["errors"])
    assert _counts(session) == before


def test_tenant_conflicts_name_the_field(client: TestClient, session: Session, op: dict[str, str]) -> None:
    assert client.post("/api/v1/tenants", json=tenant_body(), headers=op).status_code == 201
    _assert_problem(client.post("/api/v1/tenants", json=tenant_body("other", vlan=None), headers=op), 409, "vni")
    _assert_problem(client.post("/api/v1/tenants", json=tenant_body("other", vni=9), headers=op), 409, "vlan")
    _assert_problem(client.post("/api/v1/tenants", json=tenant_body(vni=9, vlan=9), headers=op), 409, "name")
    _assert_problem(client.post("/api/v1/tenants", json=tenant_body(vni=0), headers=op), 422, "vni")


def test_unknown_fields_are_refused(client: TestClient, op: dict[str, str]) -> None:
    _assert_problem(client.post("/api/v1/tenants", json=tenant_body(colour="red"), headers=op), 422, "colour")
