"""Admission control through the API on real PostgreSQL (seed 004 §V-B, Eq. 1-3, Table II).

Seed 004 Table II's slices (rate limit / burst limit: DC 48 Mbit/s / 20 ms, Enterprise
12 / 10, Peering 240 / 30), each slice's burst limit also its delay bound (``max_delay_ms``
is both), on a backend whose egress link is set per test. Bursts: DC 0.96 Mbit, Enterprise
0.12 Mbit, Peering 7.2 Mbit. Seed 004's priorities 7 > 6 > 5 are the Flexible Slice's lanes
6 > 4 > 2 here (a p4rt backend has 8 lanes: no folding); only their order matters.

Fig. 15 cases C and D need 330 Mbit/s. Hand-computed:
* case C (DC, Enterprise at 6; Peering at 4), link 330: Peering waits
  (0.96 + 0.12) / 330 + 7.2 / (330 - 48 - 12) = 3.2727 + 26.6667 = 29.939 ms <= 30: admitted.
  At 320: 1.08 / 320 + 7.2 / 260 = 3.375 + 27.6923 = 31.067 ms > 30: refused.
* case D (6 / 4 / 2), link 331: Peering waits 0.96 / 331 + 0.12 / 283 + 7.2 / 271
  = 2.9003 + 0.4240 + 26.5683 = 29.893 ms: admitted; at 325:
  0.96 / 325 + 0.12 / 277 + 7.2 / 265 = 2.9538 + 0.4332 + 27.1698 = 30.557 ms: refused.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog
from sliceportal_testbed.processes import RunningTarget
from tests.factories import idle_backend, integrator_key, slice_type_id, tenant_body

MBIT = 1_000_000
TABLE_II = {"DC": (48.0, 20.0), "Enterprise": (12.0, 10.0), "Peering": (240.0, 30.0)}
CASE_C = {"DC": 6, "Enterprise": 6, "Peering": 4}
CASE_D = {"DC": 6, "Enterprise": 4, "Peering": 2}


def _backend(client: TestClient, op: dict[str, str], link_mbps: float, address: str | None = None) -> int:
    b = idle_backend(client, op, {"address": address} if address else None, link_bps=int(link_mbps * MBIT))
    assert b["link_bps"] == int(link_mbps * MBIT) and b["lanes"] == 8
    return int(b["id"])


def _slice_body(
    client: TestClient, op: dict[str, str], tenant: int, bid: int, name: str, lane: int, **sla: float
) -> dict[str, Any]:
    rate, burst = TABLE_II.get(name, (10.0, 10.0))
    return {
        "name": name,
        "tenant_id": tenant,
        "slice_type_id": slice_type_id(client, op, "Flexible Slice"),
        "sla": {"rate_limit_mbps": rate, "max_delay_ms": burst, **sla},
        "backend_ids": [bid],
        "services": [{"name": "all", "lane": lane, "dst_ports": [{"lo": 5000 + lane, "hi": 5000 + lane}]}],
    }


def _tenant(client: TestClient, op: dict[str, str]) -> int:
    return int(client.post("/api/v1/tenants", json=tenant_body(), headers=op).json()["id"])


def _slice_count(client: TestClient, op: dict[str, str]) -> int:
    return int(client.get("/api/v1/slices", headers=op).json()["count"])


def test_case_c_refused_at_320_then_admitted_at_330(client: TestClient, op: dict[str, str]) -> None:
    t = _tenant(client, op)
    bid = _backend(client, op, 320)
    for name in ("DC", "Enterprise"):
        r = client.post("/api/v1/slices", json=_slice_body(client, op, t, bid, name, CASE_C[name]), headers=op)
        assert r.status_code == 201, r.text
    r = client.post("/api/v1/slices", json=_slice_body(client, op, t, bid, "Peering", 4), headers=op)
    assert r.status_code == 409, r.text
    problem = r.json()
    assert problem["title"] == "Admission refused"
    assert [e["field"] for e in problem["errors"]] == ["sla.max_delay_ms"]
    assert "slice Peering at lane 4" in problem["detail"] and "31.067 ms" in problem["detail"]
    [computation] = problem["admission"]
    assert computation["backend_id"] == bid and computation["capacity_bps"] == 320 * MBIT
    assert computation["ok"] is False
    peering = next(v for v in computation["delay"] if v["slice_name"] == "Peering")
    assert peering["lane"] == 4 and peering["delay_bound_ms"] == 30 and peering["ok"] is False
    assert [(t["slice_name"], t["lane"], t["burst_bits"], t["residual_bps"]) for t in peering["terms"]] == [
        ("DC", 6, pytest.approx(0.96 * MBIT), 320 * MBIT),
        ("Enterprise", 6, pytest.approx(0.12 * MBIT), 320 * MBIT),
        ("Peering", 4, pytest.approx(7.2 * MBIT), 260 * MBIT),
    ]
    assert [t["ms"] for t in peering["terms"]] == pytest.approx([3.0, 0.375, 27.6923], abs=1e-4)
    assert peering["worst_delay_ms"] == pytest.approx(31.0673, abs=1e-4)
    dc = next(v for v in computation["delay"] if v["slice_name"] == "DC")
    assert dc["ok"] is True and dc["worst_delay_ms"] == pytest.approx(1.08 / 320 * 1e3)
    # nothing was written
    assert _slice_count(client, op) == 2
    # the link of Fig. 15: 330 Mbit/s admits case C
    b = client.get(f"/api/v1/backends/{bid}", headers=op).json()
    r = client.patch(f"/api/v1/backends/{bid}", json={"link_bps": 330 * MBIT, "version": b["version"]}, headers=op)
    assert r.status_code == 200, r.text
    r = client.post("/api/v1/slices", json=_slice_body(client, op, t, bid, "Peering", 4), headers=op)
    assert r.status_code == 201, r.text
    # and lowering the link again under the admitted slices is refused, naming the link
    b = client.get(f"/api/v1/backends/{bid}", headers=op).json()
    r = client.patch(f"/api/v1/backends/{bid}", json={"link_bps": 320 * MBIT, "version": b["version"]}, headers=op)
    assert r.status_code == 409 and r.json()["admission"][0]["capacity_bps"] == 320 * MBIT
    assert client.get(f"/api/v1/backends/{bid}", headers=op).json()["link_bps"] == 330 * MBIT


@pytest.mark.parametrize(("link", "admitted", "worst_ms"), [(331, True, 29.8926), (325, False, 30.5569)])
def test_case_d(client: TestClient, op: dict[str, str], link: int, admitted: bool, worst_ms: float) -> None:
    t = _tenant(client, op)
    bid = _backend(client, op, link)
    for name in ("DC", "Enterprise"):
        assert (
            client.post(
                "/api/v1/slices", json=_slice_body(client, op, t, bid, name, CASE_D[name]), headers=op
            ).status_code
            == 201
        )
    r = client.post("/api/v1/slices", json=_slice_body(client, op, t, bid, "Peering", 2), headers=op)
    assert r.status_code == (201 if admitted else 409), r.text
    if not admitted:
        peering = next(v for v in r.json()["admission"][0]["delay"] if v["slice_name"] == "Peering")
        assert peering["worst_delay_ms"] == pytest.approx(worst_ms, abs=1e-4)
        assert [t["residual_bps"] for t in peering["terms"]] == [link * MBIT, (link - 48) * MBIT, (link - 60) * MBIT]


def test_guarantees_and_edits(client: TestClient, op: dict[str, str]) -> None:
    t = _tenant(client, op)
    bid = _backend(client, op, 100)
    a = client.post(
        "/api/v1/slices",
        headers=op,
        json=_slice_body(client, op, t, bid, "a", 0, guaranteed_mbps=60, rate_limit_mbps=60),
    )
    assert a.status_code == 201, a.text
    # 60 + 50 = 110 Mbit/s guaranteed on a 100 Mbit/s link
    r = client.post(
        "/api/v1/slices",
        headers=op,
        json=_slice_body(client, op, t, bid, "b", 2, guaranteed_mbps=50, rate_limit_mbps=50),
    )
    assert r.status_code == 409
    g = r.json()["admission"][0]["guaranteed"]
    assert (g["sum_bps"], g["limit_bps"], g["ok"]) == (110 * MBIT, 100 * MBIT, False)
    assert [(x["slice_name"], x["guaranteed_bps"]) for x in g["terms"]] == [("a", 60 * MBIT), ("b", 50 * MBIT)]
    assert r.json()["errors"][0]["field"] == "sla.guaranteed_mbps" and "= 110 Mbit/s" in r.json()["detail"]
    # an edit is checked the same way, and a refused edit changes nothing
    s = a.json()
    sla = {**s["sla"], "guaranteed_mbps": 120, "rate_limit_mbps": 120}
    r = client.patch(f"/api/v1/slices/{s['id']}", json={"sla": sla, "version": s["version"]}, headers=op)
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "sla.guaranteed_mbps"
    assert client.get(f"/api/v1/slices/{s['id']}", headers=op).json()["sla"]["guaranteed_mbps"] == 60


def test_rate_limits_above_the_link_are_refused_as_unbounded(client: TestClient, op: dict[str, str]) -> None:
    """Rate limits of higher lanes that take the whole link leave a lane no residual (Eq. 2 <= 0):
    its worst case is unbounded, and the refusal says so (a 409 with the terms, not a 500)."""
    t = _tenant(client, op)
    bid = _backend(client, op, 10)
    hi = client.post("/api/v1/slices", headers=op, json=_slice_body(client, op, t, bid, "hi", 6, rate_limit_mbps=10))
    assert hi.status_code == 201, hi.text
    r = client.post("/api/v1/slices", headers=op, json=_slice_body(client, op, t, bid, "lo", 0, rate_limit_mbps=1))
    assert r.status_code == 409, r.text
    assert "worst-case delay unbounded = 0.1 Mbit / 10 Mbit/s (hi) + 0.01 Mbit / 0 Mbit/s (lo)" in r.json()["detail"]
    lo = next(d for d in r.json()["admission"][0]["delay"] if d["slice_name"] == "lo")
    assert (lo["worst_delay_ms"], lo["ok"]) == (None, False)


def test_override_operators_only_and_audited(client: TestClient, session: Session, op: dict[str, str]) -> None:
    t = _tenant(client, op)
    bid = _backend(client, op, 100)
    body = _slice_body(client, op, t, bid, "big", 0, guaranteed_mbps=150, rate_limit_mbps=150)
    key = integrator_key(client, session, op, ["read", "write", "deploy"], username="integ")
    r = client.post("/api/v1/slices", json=body, headers={**key, "Admission-Override": "trust me"})
    assert r.status_code == 403 and r.json()["errors"][0]["field"] == "admission_override"
    r = client.post("/api/v1/slices", json=body, headers={**op, "Admission-Override": "  "})
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "admission_override"
    assert _slice_count(client, op) == 0
    r = client.post("/api/v1/slices", json=body, headers={**op, "Admission-Override": "peak-hour trial, ticket 42"})
    assert r.status_code == 201, r.text
    [row] = session.scalars(select(AuditLog).where(AuditLog.action == "admission_override")).all()
    assert row.actor == "op" and row.object_type == "slice" and row.object_id == r.json()["id"]
    assert row.after is not None and row.after["reason"] == "peak-hour trial, ticket 42"
    assert row.after["admission"][0]["guaranteed"]["sum_bps"] == 150 * MBIT
    big = r.json()
    # the admitted overbooking stands: another slice on the link (whose worst case holds big's
    # 1.5 Mbit burst: (1.5 + 0.01) / 100 = 15.1 ms > 10 ms) is not refused for it, and says so
    small = client.post(
        "/api/v1/slices", json=_slice_body(client, op, t, bid, "small", 0, rate_limit_mbps=1), headers=op
    )
    assert small.status_code == 201, small.text
    # editing the admitted slice without an override decides anew: refused again
    r = client.patch(f"/api/v1/slices/{big['id']}", json={"description": "x", "version": big["version"]}, headers=op)
    assert r.status_code == 409, r.text
    verdicts = {(v["slice_name"], v["lane"]): v for v in r.json()["admission"][0]["delay"]}
    assert verdicts[("small", 0)]["worst_delay_ms"] == pytest.approx(15.1) and not verdicts[("small", 0)]["waived"]


def test_deploy_runs_admission(
    client: TestClient, op: dict[str, str], start_target: Callable[..., RunningTarget]
) -> None:
    target = start_target("--priority-queues", "8")
    t = _tenant(client, op)
    bid = _backend(client, op, 330, target.address)
    for name, lane in CASE_C.items():
        assert (
            client.post("/api/v1/slices", json=_slice_body(client, op, t, bid, name, lane), headers=op).status_code
            == 201
        )
    # the link is re-rated by an operator who overrides (audited); the deploy then refuses
    b = client.get(f"/api/v1/backends/{bid}", headers=op).json()
    r = client.patch(
        f"/api/v1/backends/{bid}",
        json={"link_bps": 320 * MBIT, "version": b["version"]},
        headers={**op, "Admission-Override": "link being upgraded tonight"},
    )
    assert r.status_code == 200, r.text
    r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert r.status_code == 409 and r.json()["admission"][0]["ok"] is False
    assert client.get(f"/api/v1/backends/{bid}/deployments", headers=op).json()["count"] == 0
    with client.stream(
        "POST", f"/api/v1/backends/{bid}/deployments", headers={**op, "Accept": "application/x-ndjson"}
    ) as s:
        assert s.status_code == 409
    r = client.post(
        f"/api/v1/backends/{bid}/deployments", headers={**op, "Admission-Override": "link being upgraded tonight"}
    )
    assert r.status_code == 201 and r.json()["status"] == "succeeded", r.text


def test_a_service_lane_change_is_admitted_too(client: TestClient, op: dict[str, str]) -> None:
    # case C at 330 Mbit/s, then DC's only service moves from lane 6 to lane 2, below Peering (4):
    # DC waits 0.12 / 330 (Enterprise) + 7.2 / (330 - 12) (Peering) + 0.96 / (330 - 12 - 240) (itself)
    # = 0.3636 + 22.6415 + 12.3077 = 35.313 ms > its 20 ms bound
    t = _tenant(client, op)
    bid = _backend(client, op, 330)
    ids = {
        name: client.post("/api/v1/slices", json=_slice_body(client, op, t, bid, name, lane), headers=op).json()["id"]
        for name, lane in CASE_C.items()
    }
    svc = client.get(f"/api/v1/slices/{ids['DC']}", headers=op).json()["services"][0]
    r = client.patch(
        f"/api/v1/slices/{ids['DC']}/services/{svc['id']}", json={"lane": 2, "version": svc["version"]}, headers=op
    )
    assert r.status_code == 409, r.text
    dc = next(v for v in r.json()["admission"][0]["delay"] if v["slice_name"] == "DC")
    assert dc["lane"] == 2 and dc["worst_delay_ms"] == pytest.approx(0.12 / 330e-3 + 7.2 / 318e-3 + 0.96 / 78e-3)
    assert client.get(f"/api/v1/slices/{ids['DC']}", headers=op).json()["services"][0]["lane"] == 6
    # a new service on lane 2 is checked the same way
    r = client.post(
        f"/api/v1/slices/{ids['DC']}/services",
        headers=op,
        json={"name": "low", "lane": 2, "dst_ports": [{"lo": 7000, "hi": 7000}]},
    )
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "sla.max_delay_ms"
    assert len(client.get(f"/api/v1/slices/{ids['DC']}/services", headers=op).json()) == 1
