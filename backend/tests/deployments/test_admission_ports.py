"""Per-port admission through the API on real PostgreSQL: Σ guarantees per port <= its capacity.

A P4Runtime backend in tenant VLAN mode (seed 002): access port 3 is exclusive to the tenant
with VLAN 100, so only that tenant's slices count on it; trunk port 1 is shared by every
tenant. Links are wide (10 Gbit/s): only the ports can refuse.
"""

from __future__ import annotations

from typing import Any

from fastapi.testclient import TestClient

from tests.factories import idle_backend, slice_type_id, tenant_body

MBIT = 1_000_000


def _backend(client: TestClient, op: dict[str, str], port_bps: dict[str, int]) -> dict[str, Any]:
    return idle_backend(client, op, {"access_ports": {"3": 100}, "trunk_ports": [1]}, port_bps=port_bps)


def _slice(
    client: TestClient,
    op: dict[str, str],
    tenant: int,
    bid: int,
    name: str,
    guaranteed: float,
    headers: dict[str, str] | None = None,
) -> Any:
    return client.post(
        "/api/v1/slices",
        headers={**op, **(headers or {})},
        json={
            "name": name,
            "tenant_id": tenant,
            "slice_type_id": slice_type_id(client, op, "Flexible Slice"),
            "sla": {"guaranteed_mbps": guaranteed, "rate_limit_mbps": guaranteed, "max_delay_ms": 10},
            "backend_ids": [bid],
            "services": [{"name": "all", "lane": 0}],
        },
    )


def test_access_port_counts_its_tenant_and_trunk_counts_all(client: TestClient, op: dict[str, str]) -> None:
    a = client.post("/api/v1/tenants", json=tenant_body("a", 5001, 100), headers=op).json()["id"]
    b = client.post("/api/v1/tenants", json=tenant_body("b", 5002, 200), headers=op).json()["id"]
    be = _backend(client, op, {"3": 50 * MBIT, "1": 100 * MBIT})
    bid = be["id"]
    assert _slice(client, op, a, bid, "a1", 40).status_code == 201
    # tenant b's slice is not on port 3 (VLAN 200): 40 + 30 on the trunk only
    assert _slice(client, op, b, bid, "b1", 30).status_code == 201
    # 40 + 20 = 60 Mbit/s of tenant a on its 50 Mbit/s access port
    r = _slice(client, op, a, bid, "a2", 20)
    assert r.status_code == 409, r.text
    problem = r.json()
    assert problem["title"] == "Admission refused"
    assert (
        "port 3" in problem["detail"]
        and "40 (a1) + 20 (a2) = 60 Mbit/s exceed the port's 50 Mbit/s" in problem["detail"]
    )
    assert [e["field"] for e in problem["errors"]] == ["sla.guaranteed_mbps"]
    [computation] = problem["admission"]
    ports = {p["port"]: p for p in computation["ports"]}
    assert (ports["3"]["sum_bps"], ports["3"]["capacity_bps"], ports["3"]["ok"]) == (60 * MBIT, 50 * MBIT, False)
    assert [(t["slice_name"], t["guaranteed_bps"]) for t in ports["3"]["terms"]] == [
        ("a1", 40 * MBIT),
        ("a2", 20 * MBIT),
    ]
    # the trunk carries every tenant: 40 + 30 + 20 = 90 of 100 fits
    assert (ports["1"]["sum_bps"], ports["1"]["ok"]) == (90 * MBIT, True)
    assert sorted(s["slice_name"] for s in ports["1"]["slices"]) == ["a1", "a2", "b1"]
    assert computation["guaranteed"]["ok"] is True  # the 10 Gbit/s link is not the limit
    assert client.get("/api/v1/slices", headers=op).json()["count"] == 2  # nothing written
    # tenant b may still add 30 to the trunk (100 of 100), not more
    assert _slice(client, op, b, bid, "b2", 30).status_code == 201
    r = _slice(client, op, b, bid, "b3", 1)
    assert r.status_code == 409 and "port 1 " in r.json()["detail"]
    # an operator's override admits it (audited), and the port's verdict then says waived
    r = _slice(client, op, b, bid, "b3", 1, {"Admission-Override": "trunk upgrade scheduled"})
    assert r.status_code == 201, r.text


def test_lowering_a_port_under_its_slices_is_refused_naming_the_port(client: TestClient, op: dict[str, str]) -> None:
    a = client.post("/api/v1/tenants", json=tenant_body("a", 5001, 100), headers=op).json()["id"]
    be = _backend(client, op, {"3": 50 * MBIT})
    assert _slice(client, op, a, be["id"], "a1", 40).status_code == 201
    r = client.patch(
        f"/api/v1/backends/{be['id']}", headers=op, json={"port_bps": {"3": 30 * MBIT}, "version": be["version"]}
    )
    assert r.status_code == 409, r.text
    assert [e["field"] for e in r.json()["errors"]] == ["port_bps.3"]
    assert "40 (a1) = 40 Mbit/s exceed the port's 30 Mbit/s" in r.json()["detail"]
    after = client.get(f"/api/v1/backends/{be['id']}", headers=op).json()
    assert after["port_bps"] == {"3": 50 * MBIT} and after["version"] == be["version"]
    # re-binding the access port to another VLAN frees it; the options change is admitted
    r = client.patch(
        f"/api/v1/backends/{be['id']}",
        headers=op,
        json={
            "options": {**be["options"], "access_ports": {"3": 300}},
            "port_bps": {"3": 30 * MBIT},
            "version": be["version"],
        },
    )
    assert r.status_code == 200, r.text
    assert r.json()["port_bps"] == {"3": 30 * MBIT}
