"""Collisions the database cannot see (UE pools across tenants, service ports in a slice, one
IMSI in two tenants) and the database's own refusals, all as field errors in words."""

from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog, ServiceClass, Slice, Subscriber, Tenant
from tests.factories import slice_type_id, tenant_body


def _counts(session: Session) -> tuple[int, ...]:
    session.expire_all()
    return tuple(
        session.scalar(select(func.count()).select_from(m)) or 0
        for m in (Tenant, Slice, ServiceClass, Subscriber, AuditLog)
    )


def _problem(r: Any, status: int, field: str) -> str:
    assert r.status_code == status, r.text
    assert r.headers["content-type"].startswith("application/problem+json")
    errors = {e["field"]: e["message"] for e in r.json()["errors"]}
    assert field in errors, r.json()
    assert "Key (" not in r.text and "already exists" not in r.text, r.text  # never the database's text
    return str(errors[field])


def test_ue_pools_may_not_overlap_across_tenants(client: TestClient, session: Session, op: dict[str, str]) -> None:
    red = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1, ue_pool="10.45.0.0/16"), headers=op).json()
    blue = client.post("/api/v1/tenants", json=tenant_body("blue", 2, 2, ue_pool="10.46.0.0/16"), headers=op).json()
    before = _counts(session)
    for pool in ("10.45.3.0/24", "10.0.0.0/8", "10.45.0.0/16"):  # inside, around, equal
        msg = _problem(
            client.post("/api/v1/tenants", json=tenant_body("green", 3, 3, ue_pool=pool), headers=op), 409, "ue_pool"
        )
        assert msg == (
            f"UE pool {pool} overlaps the UE pool 10.45.0.0/16 of tenant red; choose a pool no other tenant uses"
        )
    msg = _problem(
        client.patch(f"/api/v1/tenants/{blue['id']}", json={"ue_pool": "10.45.128.0/17", "version": 1}, headers=op),
        409,
        "ue_pool",
    )
    assert "of tenant red" in msg
    assert _counts(session) == before
    # a pool that touches no other one is fine, and a tenant may change its own pool freely
    assert (
        client.post("/api/v1/tenants", json=tenant_body("green", 3, 3, ue_pool="10.47.0.0/16"), headers=op).status_code
        == 201
    )
    r = client.patch(f"/api/v1/tenants/{red['id']}", json={"ue_pool": "10.45.0.0/17", "version": 1}, headers=op)
    assert r.status_code == 200, r.text


def test_database_refusals_are_field_errors_in_words(client: TestClient, session: Session, op: dict[str, str]) -> None:
    assert client.post("/api/v1/tenants", json=tenant_body(), headers=op).status_code == 201
    before = _counts(session)
    assert (
        _problem(client.post("/api/v1/tenants", json=tenant_body("other", vlan=None), headers=op), 409, "vni")
        == "VXLAN VNI 5001 is already in use; choose another."
    )
    assert (
        _problem(client.post("/api/v1/tenants", json=tenant_body("other", vni=9), headers=op), 409, "vlan")
        == "VLAN ID 100 is already in use; choose another."
    )
    assert (
        _problem(client.post("/api/v1/tenants", json=tenant_body(vni=9, vlan=9), headers=op), 409, "name")
        == "Tenant name mvno-a is already in use; choose another."
    )
    assert _counts(session) == before


def _slice(client: TestClient, op: dict[str, str], tenant: int, services: list[dict[str, Any]]) -> Any:
    return client.post(
        "/api/v1/slices",
        json={
            "name": "embb",
            "tenant_id": tenant,
            "slice_type_id": slice_type_id(client, op, "Flexible Slice"),
            "services": services,
        },
        headers=op,
    )


def test_service_port_ranges_may_not_overlap_in_a_slice(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    t = client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"]
    before = _counts(session)
    r = _slice(
        client,
        op,
        t,
        [
            {"name": "video", "lane": 0, "dst_ports": [{"lo": 5000, "hi": 5007}]},
            {"name": "voice", "lane": 2, "dst_ports": [{"lo": 6000, "hi": 6001}, {"lo": 5006, "hi": 5010}]},
        ],
    )
    assert r.status_code == 422 and r.json()["title"] == "Service port ranges overlap"
    assert _problem(r, 422, "services.1.dst_ports") == "service voice overlaps service video on ports 5006-5007"
    assert _counts(session) == before
    # the same ports told apart by DSCP or by protocol are two services, not a collision
    r = _slice(
        client,
        op,
        t,
        [
            {"name": "video", "lane": 0, "dst_ports": [{"lo": 5000, "hi": 5007}], "dscp": [0]},
            {"name": "voice", "lane": 2, "dst_ports": [{"lo": 5000, "hi": 5007}], "dscp": [46]},
            {"name": "bulk", "lane": 4, "dst_ports": [{"lo": 7000, "hi": 7000}], "protocol": "udp"},
            {"name": "web", "lane": 6, "dst_ports": [{"lo": 7000, "hi": 7000}], "protocol": "tcp"},
        ],
    )
    assert r.status_code == 201, r.text
    sid = r.json()["id"]
    before = _counts(session)
    # a new service and a changed one are checked against their siblings, naming the slice
    r = client.post(
        f"/api/v1/slices/{sid}/services",
        json={"name": "game", "lane": 6, "dst_ports": [{"lo": 7000, "hi": 7001}]},
        headers=op,
    )
    assert _problem(r, 409, "dst_ports").startswith("service game overlaps service bulk of slice embb on port 7000")
    voice = next(s for s in client.get(f"/api/v1/slices/{sid}", headers=op).json()["services"] if s["name"] == "voice")
    r = client.patch(
        f"/api/v1/slices/{sid}/services/{voice['id']}", json={"dscp": [], "version": voice["version"]}, headers=op
    )
    assert "service voice overlaps service video of slice embb on ports 5000-5007" in _problem(r, 409, "dst_ports")
    assert _counts(session) == before
    r = client.patch(
        f"/api/v1/slices/{sid}/services/{voice['id']}", json={"dscp": [46, 34], "version": voice["version"]}, headers=op
    )
    assert r.status_code == 200, r.text


def test_an_imsi_names_one_ue_across_tenants(client: TestClient, session: Session, op: dict[str, str]) -> None:
    red = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1, ue_pool="10.45.0.0/16"), headers=op).json()
    blue = client.post("/api/v1/tenants", json=tenant_body("blue", 2, 2, ue_pool="10.46.0.0/16"), headers=op).json()
    first = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": red["id"], "imsi": "001010000000001", "ue_ip": "10.45.0.1"},
        headers=op,
    )
    assert first.status_code == 201
    before = _counts(session)
    r = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": blue["id"], "imsi": "001010000000001", "ue_ip": "10.46.0.1"},
        headers=op,
    )
    assert _problem(r, 409, "imsi") == (
        f"IMSI 001010000000001 is already subscriber {first.json()['id']} of tenant red; an IMSI names one UE"
    )
    other = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": blue["id"], "imsi": "001010000000002", "ue_ip": "10.46.0.2"},
        headers=op,
    ).json()
    before = _counts(session)
    r = client.patch(f"/api/v1/subscribers/{other['id']}", json={"imsi": "001010000000001", "version": 1}, headers=op)
    assert "of tenant red" in _problem(r, 409, "imsi")
    assert _counts(session) == before
    # within one tenant the database's unique constraint answers, in words too
    r = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": red["id"], "imsi": "001010000000009", "ue_ip": "10.45.0.1"},
        headers=op,
    )
    assert _problem(r, 409, "ue_ip") == "UE address 10.45.0.1 is already in use in this tenant; choose another."


def test_import_reports_file_and_database_conflicts_in_one_pass(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    red = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1, ue_pool="10.45.0.0/16"), headers=op).json()
    client.post("/api/v1/tenants", json=tenant_body("blue", 2, 2, ue_pool="10.46.0.0/16"), headers=op)
    existing = client.post(
        "/api/v1/subscribers",
        json={"tenant_id": red["id"], "imsi": "001010000000001", "ue_ip": "10.45.0.1", "teids": [7]},
        headers=op,
    ).json()
    before = _counts(session)
    csv = (
        "imsi,ue_ip,teids,tenant,slices\n"
        "001010000000001,10.46.0.1,,blue,\n"  # line 2: IMSI of red's subscriber
        "12,10.46.0.2,,blue,\n"  # line 3: bad IMSI (a file error)
        "001010000000003,10.45.0.1,,red,\n"  # line 4: red's UE address in use
        "001010000000004,10.45.0.4,7;8,red,\n"  # line 5: TEID 7 in use
        "001010000000005,10.46.0.5,,blue,\n"  # line 6: fine
        "001010000000005,10.46.0.6,,blue,\n"
    )  # line 7: IMSI twice in the file
    r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")}, headers=op)
    assert r.status_code == 422, r.text
    errors = [(e["line"], e["field"], e["message"]) for e in r.json()["errors"]]
    sid = existing["id"]
    assert errors == [
        (2, "imsi", f"IMSI 001010000000001 is already used by subscriber {sid} of tenant red"),
        (3, "imsi", "IMSI '12' is not 14-15 digits"),
        (4, "ue_ip", f"UE address 10.45.0.1 is already used by subscriber {sid} of tenant red"),
        (5, "teids", f"TEID 7 is already used by subscriber {sid} of tenant red"),
        (7, "imsi", "IMSI 001010000000005 appears twice in the file"),
    ]
    assert _counts(session) == before


def _at_once(client: TestClient, op: dict[str, str], bodies: list[dict[str, Any]]) -> list[Any]:
    """POST every body from a thread of its own, released together."""
    start = threading.Barrier(len(bodies))

    def create(body: dict[str, Any]) -> Any:
        start.wait()
        return client.post("/api/v1/subscribers", json=body, headers=op)

    with ThreadPoolExecutor(len(bodies)) as pool:
        return list(pool.map(create, bodies))


def test_concurrent_writers_of_one_imsi_or_teid_admit_one(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    """The checks no constraint makes (an IMSI across tenants, a TEID within one) hold under
    concurrent creates: the advisory locks are taken, in one statement, before the checks read."""
    red = client.post("/api/v1/tenants", json=tenant_body("red", 1, 1, ue_pool="10.45.0.0/16"), headers=op).json()
    blue = client.post("/api/v1/tenants", json=tenant_body("blue", 2, 2, ue_pool="10.46.0.0/16"), headers=op).json()
    same_imsi = [
        {"tenant_id": t["id"], "imsi": "001010000000077", "ue_ip": f"10.{45 + n}.7.{i + 1}"}
        for i in range(4)
        for n, t in enumerate((red, blue))
    ]
    answers = _at_once(client, op, same_imsi)
    assert sorted(r.status_code for r in answers) == [201] + [409] * 7, [r.text for r in answers]
    assert all(_problem(r, 409, "imsi") for r in answers if r.status_code == 409)
    same_teid = [
        {"tenant_id": red["id"], "imsi": f"0010100000001{i:02d}", "ue_ip": f"10.45.8.{i + 1}", "teids": [4242]}
        for i in range(8)
    ]
    answers = _at_once(client, op, same_teid)
    assert sorted(r.status_code for r in answers) == [201] + [409] * 7, [r.text for r in answers]
    assert all(_problem(r, 409, "teids") for r in answers if r.status_code == 409)
    assert session.scalar(select(func.count()).select_from(Subscriber)) == 2
