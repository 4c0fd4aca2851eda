"""The telemetry ingest API (POST /kpis/ingest) on real PostgreSQL: scope, validation, limits."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Any

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import KpiSample, Role
from tests.factories import login, make_user

URL = "/api/v1/kpis/ingest"


def key(client: TestClient, scopes: list[str], tenant_id: int | None = None) -> dict[str, str]:
    """A key of the integrator's, created by an operator (an integrator's login grants only read)."""
    op = login(client, "op")
    users = client.get("/api/v1/users", headers=op).json()
    integrator = next(
        u["id"] for u in (users["data"] if isinstance(users, dict) else users) if u["username"] == "integrator"
    )
    r = client.post(
        "/api/v1/api-keys",
        json={"name": f"k{len(scopes)}{tenant_id}", "scopes": scopes, "tenant_id": tenant_id, "user_id": integrator},
        headers=op,
    )
    assert r.status_code == 201, r.text
    return {"X-API-Key": r.json()["secret"]}


def point(slice_id: int, backend_id: int, second: int, **extra: Any) -> dict[str, Any]:
    ts = datetime.now(UTC).replace(microsecond=0) - timedelta(seconds=60 - second)
    return {
        "slice_id": slice_id,
        "backend_id": backend_id,
        "lane": 0,
        "source": "probe",
        "ts": ts.isoformat(),
        "tx_packets": 10,
        "rx_packets": 9,
        "loss_pct": 10.0,
        "delay_p99_ms": 40.2,
        "jitter_ms": 0.3,
    } | extra


def stored(session: Session) -> int:
    session.expire_all()
    return int(session.scalar(select(func.count()).select_from(KpiSample)) or 0)


def test_probe_points_are_stored_beside_counters_and_read_back(
    client: TestClient, session: Session, tenants: dict[str, int]
) -> None:
    make_user(session, "integrator", Role.INTEGRATOR)
    k = key(client, ["telemetry"])
    red, backend = tenants["red"], tenants["backend"]
    r = client.post(URL, json={"points": [point(red, backend, s) for s in range(3)]}, headers=k)
    assert r.status_code == 201, r.text
    assert r.json()["stored"] == 3
    # the same interval from the data plane's counters is another sample, not an overwrite
    counters = point(red, backend, 2, source="counters")
    assert client.post(URL, json={"points": [counters]}, headers=k).status_code == 422
    op = login(client, "op")
    got = client.get(f"/api/v1/slices/{red}/kpis", params={"source": "probe"}, headers=op).json()
    assert [(p["source"], p["delay_p99_ms"]) for p in got] == [("probe", 40.2)] * 3
    assert client.get(f"/api/v1/slices/{red}/kpis", params={"source": "counters"}, headers=op).json() == []


def test_a_key_without_the_telemetry_scope_is_refused(
    client: TestClient, session: Session, tenants: dict[str, int]
) -> None:
    make_user(session, "integrator", Role.INTEGRATOR)
    k = key(client, ["read", "write", "deploy"])
    r = client.post(URL, json={"points": [point(tenants["red"], tenants["backend"], 0)]}, headers=k)
    assert r.status_code == 403 and "telemetry" in r.json()["detail"]
    assert stored(session) == 0


def test_one_bad_point_refuses_the_batch_naming_its_field(
    client: TestClient, session: Session, tenants: dict[str, int]
) -> None:
    make_user(session, "integrator", Role.INTEGRATOR)
    k = key(client, ["telemetry"])
    red, backend = tenants["red"], tenants["backend"]
    good = [point(red, backend, s) for s in range(4)]
    cases = [
        ({"loss_pct": 120.0}, "points.2.loss_pct"),
        ({"lane": 9}, "points.2.lane"),
        ({"source": "counters"}, "points.2.source"),
        ({"ts": "2026-11-27T12:00:00"}, "points.2.ts"),  # no time zone
        ({"slice_id": 999_999}, "points.2.slice_id"),
        ({"backend_id": 999_999}, "points.2.backend_id"),
        ({"ts": (datetime.now(UTC) + timedelta(hours=1)).isoformat()}, "points.2.ts"),
        ({"bogus": 1}, "points.2.bogus"),
    ]
    for change, field in cases:
        batch = [*good[:2], good[2] | change, good[3]]
        r = client.post(URL, json={"points": batch}, headers=k)
        assert r.status_code == 422, (change, r.text)
        assert field in [e["field"] for e in r.json()["errors"]], (change, r.json())
    dup = client.post(URL, json={"points": [*good, good[1]]}, headers=k)
    assert dup.status_code == 422 and dup.json()["errors"][0]["field"] == "points.4.ts", dup.text
    assert stored(session) == 0


def test_a_key_bound_to_a_tenant_posts_for_its_own_slices_only(
    client: TestClient, session: Session, tenants: dict[str, int]
) -> None:
    make_user(session, "integrator", Role.INTEGRATOR)
    red_tenant = client.get(f"/api/v1/slices/{tenants['red']}", headers=login(client, "op")).json()["tenant_id"]
    k = key(client, ["telemetry"], tenant_id=red_tenant)
    ok = client.post(URL, json={"points": [point(tenants["red"], tenants["backend"], 0)]}, headers=k)
    assert ok.status_code == 201, ok.text
    r = client.post(
        URL,
        json={"points": [point(tenants["red"], tenants["backend"], 1), point(tenants["blue"], tenants["backend"], 1)]},
        headers=k,
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "points.1.slice_id", r.text
    assert stored(session) == 1


def test_size_and_rate_limits(client: TestClient, session: Session, tenants: dict[str, int]) -> None:
    make_user(session, "integrator", Role.INTEGRATOR)
    k = key(client, ["telemetry"])
    red, backend = tenants["red"], tenants["backend"]
    many = [
        point(red, backend, 0, lane=0, ts=(datetime(2026, 1, 1, tzinfo=UTC) + timedelta(seconds=i)).isoformat())
        for i in range(2_001)
    ]
    r = client.post(URL, json={"points": many}, headers=k)
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "points", r.text
    # the largest batch allowed is stored whole (more rows than one statement binds)
    full = client.post(URL, json={"points": many[:2_000]}, headers=k)
    assert full.status_code == 201 and full.json()["stored"] == 2_000, full.text[:500]
    huge = client.post(
        URL,
        content=b'{"points": [' + b" " * (3 * 1024 * 1024) + b"]}",
        headers=k | {"Content-Type": "application/json"},
    )
    assert huge.status_code == 413, huge.text
    client.app.state.telemetry_rate_limit = "3/minute"  # type: ignore[attr-defined]
    codes = [client.post(URL, json={"points": [point(red, backend, s)]}, headers=k).status_code for s in range(4)]
    assert codes == [201, 201, 201, 429]
    assert stored(session) == 2_003
