"""Per-subscriber guarantees through the API on real PostgreSQL.

A slice promises its own guarantee, or the sum of its subscribers' guarantees when larger;
adding, editing or importing subscribers with a guarantee runs admission control on every
backend the slice uses, and a refusal writes nothing. The link is 100 Mbit/s; slice ``fixed``
guarantees 50, slice ``per-ue`` guarantees 10 itself and is rate-limited to 80.
"""

from __future__ import annotations

from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models import AuditLog, Slice
from tests.factories import add_slice, add_tenant, idle_backend

MBIT = 1_000_000


def _slice(
    client: TestClient, op: dict[str, str], tenant: int, bid: int, name: str, lane: int, **sla: float | None
) -> int:
    """A slice of one service (every port) on ``lane`` of backend ``bid``."""
    return add_slice(client, op, tenant, name, sla=sla, backend_ids=[bid], services=[{"name": "all", "lane": lane}])


@pytest.fixture
def world(client: TestClient, op: dict[str, str]) -> dict[str, int]:
    tenant = add_tenant(client, op)
    bid = idle_backend(client, op, link_bps=100 * MBIT)["id"]
    ids = {
        # no delay bound: guarantees only
        name: _slice(client, op, tenant, bid, name, 0, guaranteed_mbps=guaranteed, rate_limit_mbps=rate)
        for name, guaranteed, rate in (("fixed", 50, 50), ("per-ue", 10, 80))
    }
    return {"tenant": tenant, "backend": bid, **ids}


def _sub(
    client: TestClient,
    op: dict[str, str],
    world: dict[str, int],
    n: int,
    mbps: float | None,
    headers: dict[str, str] | None = None,
) -> Any:
    body: dict[str, Any] = {
        "tenant_id": world["tenant"],
        "imsi": f"00101000000{n:04d}",
        "ue_ip": f"10.45.0.{n}",
        "slice_ids": [world["per-ue"]],
    }
    if mbps is not None:
        body["guaranteed_bps"] = int(mbps * MBIT)
    return client.post("/api/v1/subscribers", json=body, headers={**op, **(headers or {})})


def _count(client: TestClient, op: dict[str, str]) -> int:
    return int(client.get("/api/v1/subscribers", headers=op).json()["count"])


def test_subscriber_guarantees_add_up_on_the_link(
    client: TestClient, op: dict[str, str], world: dict[str, int]
) -> None:
    # 30 of per-ue's subscribers: max(10, 30) + 50 = 80 of 100
    first = _sub(client, op, world, 1, 30)
    assert first.status_code == 201, first.text
    assert first.json()["guaranteed_bps"] == 30 * MBIT
    assert _sub(client, op, world, 2, None).status_code == 201  # no guarantee of its own: nothing to check
    # 30 + 30 = 60 > 10: per-ue promises 60, and 60 + 50 = 110 > 100
    r = _sub(client, op, world, 3, 30)
    assert r.status_code == 409, r.text
    problem = r.json()
    assert [e["field"] for e in problem["errors"]] == ["guaranteed_bps"]
    assert "50 (fixed) + 60 (per-ue, 2 subscribers) = 110 Mbit/s exceed the link's 100 Mbit/s" in problem["detail"]
    terms = {t["slice_name"]: t for t in problem["admission"][0]["guaranteed"]["terms"]}
    assert (
        terms["per-ue"]["guaranteed_bps"],
        terms["per-ue"]["slice_guaranteed_bps"],
        terms["per-ue"]["subscribers"],
        terms["per-ue"]["subscribers_bps"],
    ) == (60 * MBIT, 10 * MBIT, 2, 60 * MBIT)
    assert _count(client, op) == 2
    # raising a subscriber's guarantee is checked the same way, and a refused edit changes nothing
    s = first.json()
    r = client.patch(
        f"/api/v1/subscribers/{s['id']}", headers=op, json={"guaranteed_bps": 60 * MBIT, "version": s["version"]}
    )
    assert r.status_code == 409 and r.json()["errors"][0]["field"] == "guaranteed_bps"
    assert client.get(f"/api/v1/subscribers/{s['id']}", headers=op).json()["guaranteed_bps"] == 30 * MBIT
    # lowering it is not
    r = client.patch(
        f"/api/v1/subscribers/{s['id']}", headers=op, json={"guaranteed_bps": 20 * MBIT, "version": s["version"]}
    )
    assert r.status_code == 200, r.text
    # the slice's own edits now count its subscribers too: fixed cannot grow past 100 - 20
    f = client.get(f"/api/v1/slices/{world['fixed']}", headers=op).json()
    r = client.patch(
        f"/api/v1/slices/{f['id']}",
        headers=op,
        json={"sla": {**f["sla"], "guaranteed_mbps": 81, "rate_limit_mbps": 81}, "version": f["version"]},
    )
    assert r.status_code == 409 and "81 (fixed) + 20 (per-ue, 1 subscribers)" in r.json()["detail"]


def test_subscribers_beyond_the_slice_rate_limit_are_refused(
    client: TestClient, op: dict[str, str], world: dict[str, int]
) -> None:
    b = client.get(f"/api/v1/backends/{world['backend']}", headers=op).json()
    assert (
        client.patch(
            f"/api/v1/backends/{b['id']}", headers=op, json={"link_bps": 10_000 * MBIT, "version": b["version"]}
        ).status_code
        == 200
    )
    assert _sub(client, op, world, 1, 50).status_code == 201
    r = _sub(client, op, world, 2, 40)  # 90 Mbit/s of guarantees behind per-ue's 80 Mbit/s rate limit
    assert r.status_code == 409, r.text
    assert (
        "slice per-ue: the guarantees of its 2 subscribers add up to 90 Mbit/s, more than its rate limit "
        "of 80 Mbit/s" in r.json()["detail"]
    )
    [row] = [x for x in r.json()["admission"][0]["subscribers"] if x["slice_name"] == "per-ue"]
    assert (row["count"], row["sum_bps"], row["rate_limit_bps"], row["ok"]) == (2, 90 * MBIT, 80 * MBIT, False)


def _csv(world: dict[str, int], rows: list[tuple[int, float | None]]) -> bytes:
    lines = ["imsi,ue_ip,teids,tenant,slices,guaranteed_bps"]
    lines += [
        f"00101000001{n:04d},10.45.1.{n},,{world['tenant']},per-ue,{'' if g is None else int(g * MBIT)}"
        for n, g in rows
    ]
    return ("\n".join(lines) + "\n").encode()


def test_bulk_import_runs_admission_all_or_nothing(
    client: TestClient, session: Session, op: dict[str, str], world: dict[str, int]
) -> None:
    # 100 rows of 0.5 Mbit/s: per-ue promises 50, 50 + 50 = 100 of 100 fits
    r = client.post(
        "/api/v1/subscribers/import",
        headers=op,
        files={"file": ("a.csv", _csv(world, [(n, 0.5) for n in range(1, 101)]), "text/csv")},
    )
    assert r.status_code == 201, r.text
    assert _count(client, op) == 100
    # one more guaranteed row tips it over; the rows without a guarantee in the same file are not imported either
    body = _csv(world, [(101, None), (102, 0.5), (103, None)])
    r = client.post("/api/v1/subscribers/import", headers=op, files={"file": ("b.csv", body, "text/csv")})
    assert r.status_code == 409, r.text
    assert "50 (fixed) + 50.5 (per-ue, 101 subscribers) = 100.5 Mbit/s" in r.json()["detail"]
    assert _count(client, op) == 100
    # a bad guarantee is a row error like any other
    r = client.post(
        "/api/v1/subscribers/import",
        headers=op,
        files={"file": ("c.csv", _csv(world, [(104, None)]).replace(b",\n", b",fast\n"), "text/csv")},
    )
    assert r.status_code == 422 and r.json()["errors"][0]["field"] == "guaranteed_bps"
    # an operator's override imports it, audited, and the slice is marked as admitted over the refusal
    r = client.post(
        "/api/v1/subscribers/import",
        headers={**op, "Admission-Override": "event weekend"},
        files={"file": ("b.csv", body, "text/csv")},
    )
    assert r.status_code == 201, r.text
    assert _count(client, op) == 103
    [row] = session.scalars(select(AuditLog).where(AuditLog.action == "admission_override")).all()
    assert row.object_type == "subscriber" and row.after is not None and row.after["action"] == "import"
    session.expire_all()
    assert session.get(Slice, world["per-ue"]).admission_override == "event weekend"  # type: ignore[union-attr]


def test_a_subscriber_is_not_refused_for_a_delay_it_does_not_move(client: TestClient, op: dict[str, str]) -> None:
    # lo (lane 0, 10 Mbit/s, 10 ms) waits 0.1 Mbit / (100 - 90) = 10 ms behind hi (lane 6, 90 Mbit/s):
    # admitted; the link re-rated to 95 with an override: lo's worst case becomes 0.1 / 5 = 20 ms
    tenant = add_tenant(client, op)
    be = idle_backend(client, op, link_bps=100 * MBIT)
    ids = {
        name: _slice(client, op, tenant, be["id"], name, lane, rate_limit_mbps=rate, max_delay_ms=delay)
        for name, lane, rate, delay in (("hi", 6, 90, None), ("lo", 0, 10, 10))
    }
    r = client.patch(
        f"/api/v1/backends/{be['id']}",
        json={"link_bps": 95 * MBIT, "version": be["version"]},
        headers={**op, "Admission-Override": "re-rated while the link is repaired"},
    )
    assert r.status_code == 200, r.text
    # the delay refusal stands for slice changes ...
    lo = client.get(f"/api/v1/slices/{ids['lo']}", headers=op).json()
    r = client.patch(f"/api/v1/slices/{lo['id']}", json={"description": "x", "version": lo["version"]}, headers=op)
    assert r.status_code == 409 and "worst-case delay 20.000 ms" in r.json()["detail"]
    # ... but a guaranteed subscriber joining lo moves only the rates, which fit: admitted
    r = client.post(
        "/api/v1/subscribers",
        headers=op,
        json={
            "tenant_id": tenant,
            "imsi": "001010000009999",
            "ue_ip": "10.45.9.1",
            "slice_ids": [ids["lo"]],
            "guaranteed_bps": 5 * MBIT,
        },
    )
    assert r.status_code == 201, r.text
    # and its rates are still checked: 5 + 6 = 11 > lo's 10 Mbit/s rate limit
    r = client.post(
        "/api/v1/subscribers",
        headers=op,
        json={
            "tenant_id": tenant,
            "imsi": "001010000009998",
            "ue_ip": "10.45.9.2",
            "slice_ids": [ids["lo"]],
            "guaranteed_bps": 6 * MBIT,
        },
    )
    assert r.status_code == 409 and [e["field"] for e in r.json()["errors"]] == ["guaranteed_bps"]
    assert "worst-case delay" not in r.json()["detail"]
