"""KPI storage keyed by backend, tenant-scoped queries, Prometheus exposition and the live hub."""

from __future__ import annotations

import asyncio
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from pydantic import TypeAdapter
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.retention import apply_retention
from sliceportal.kpi.sla import HoldDown
from sliceportal.kpi.store import ingest
from sliceportal.models import KpiSample, SlaViolation
from sliceportal.schemas.kpis import KpiSamplePublic
from tests.factories import backend_row, login, red_and_blue

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)


@pytest.fixture
def world(client: TestClient, session: Session, op: dict[str, str]) -> dict[str, object]:
    ids = red_and_blue(client, session, op, {"max_loss_pct": 1, "max_delay_ms": 10})
    global XDP, BMV2
    XDP, BMV2 = backend_row(session), backend_row(session, "bmv2-a", "p4rt")
    return {"op": op, "red": login(client, "red-view"), "ids": ids}


XDP = BMV2 = 0  # the world's two backends' ids


def _point(
    slice_id: int, lane: int, second: int, loss: float = 0.0, delay: float = 1.0, backend_id: int | None = None
) -> KpiPoint:
    return KpiPoint(
        slice_id=slice_id,
        backend_id=XDP if backend_id is None else backend_id,
        lane=lane,
        source="testbed",
        ts=T0 + timedelta(seconds=second),
        tx_packets=1000,
        rx_packets=int(1000 * (1 - loss / 100)),
        rx_bytes=1_000_000,
        throughput_bps=8e6,
        loss_pct=loss,
        delay_mean_ms=delay / 2,
        delay_p50_ms=delay / 2,
        delay_p99_ms=delay,
        jitter_ms=0.1,
    )


def test_range_current_and_isolation(client: TestClient, session: Session, world: dict[str, object]) -> None:
    ids = world["ids"]  # type: ignore[assignment]
    red_slice, blue_slice = ids["red"][1], ids["blue"][1]  # type: ignore[index]
    ingest(
        session,
        [_point(red_slice, lane, s) for s in range(10) for lane in (0, 2)]
        + [_point(blue_slice, 0, s) for s in range(10)],
    )
    op, red = world["op"], world["red"]
    since, until = (T0 + timedelta(seconds=4)).isoformat(), (T0 + timedelta(seconds=9)).isoformat()
    r = client.get(f"/api/v1/slices/{red_slice}/kpis", params={"since": since, "until": until}, headers=red)
    assert r.status_code == 200 and len(r.json()) == 5 * 2  # seconds 5..9, two lanes
    lane2 = client.get(
        f"/api/v1/slices/{red_slice}/kpis", params={"since": since, "until": until, "lane": 2}, headers=op
    ).json()
    assert {p["lane"] for p in lane2} == {2}
    current = client.get(f"/api/v1/slices/{red_slice}/kpis/current", headers=red).json()
    assert [(p["lane"], p["ts"][:19]) for p in current] == [(0, "2026-11-22T12:00:09"), (2, "2026-11-22T12:00:09")]
    # the other tenant's KPIs do not exist for red
    assert client.get(f"/api/v1/slices/{blue_slice}/kpis", headers=red).status_code == 404
    assert client.get(f"/api/v1/slices/{blue_slice}/kpis/current", headers=red).status_code == 404
    # an interval reported twice overwrites
    ingest(session, [_point(red_slice, 0, 9, loss=0.5)])
    assert session.scalar(select(func.count()).select_from(KpiSample).where(KpiSample.slice_id == red_slice)) == 20


def test_a_range_answers_the_models_json(client: TestClient, session: Session, world: dict[str, object]) -> None:
    """The range is written as JSON from the rows, without a model each: byte for byte what the
    response model makes of the stored samples (nulls, drops, times with their zone included)."""
    red_slice = world["ids"]["red"][1]  # type: ignore[index]
    points = [_point(red_slice, lane, s, loss=lane / 3) for s in range(4) for lane in (0, 2)]
    points[0] = points[0].model_copy(update={"delay_p50_ms": None, "drops": {"queue": 3, "policer": 1}})
    ingest(session, points)
    since, until = (T0 - timedelta(seconds=1)).isoformat(), (T0 + timedelta(seconds=9)).isoformat()
    r = client.get(f"/api/v1/slices/{red_slice}/kpis", params={"since": since, "until": until}, headers=world["op"])
    stored = session.scalars(
        select(KpiSample)
        .where(KpiSample.slice_id == red_slice)
        .order_by(KpiSample.ts, KpiSample.backend_id, KpiSample.lane, KpiSample.source)
    )
    models = [KpiSamplePublic.model_validate(x) for x in stored]
    assert len(models) == 8
    assert r.content == TypeAdapter(list[KpiSamplePublic]).dump_json(models)


def test_violations_api_is_tenant_scoped(client: TestClient, session: Session, world: dict[str, object]) -> None:
    ids = world["ids"]  # type: ignore[assignment]
    red_slice, blue_slice = ids["red"][1], ids["blue"][1]  # type: ignore[index]
    hold = HoldDown(open_after=1, close_after=1)  # instant: this test is about the API, test_sla about timing
    ingest(
        session,
        [
            _point(red_slice, 0, 0),
            _point(red_slice, 0, 1, loss=5),
            _point(red_slice, 0, 2, loss=9),
            _point(red_slice, 0, 3),
            _point(blue_slice, 2, 0, delay=25),
        ],
        hold=hold,
    )
    v = session.scalars(select(SlaViolation).order_by(SlaViolation.slice_id)).all()
    assert [(x.slice_id, x.backend_id, x.lane, x.metric, x.worst) for x in v] == [
        (red_slice, XDP, 0, "loss_pct", 9.0),
        (blue_slice, XDP, 2, "delay_p99_ms", 25.0),
    ]
    assert v[0].started_at == T0 and v[0].ended_at == T0 + timedelta(seconds=2)
    assert v[1].ended_at is None
    red = client.get("/api/v1/violations", headers=world["red"]).json()  # type: ignore[arg-type]
    assert [x["slice_id"] for x in red["data"]] == [red_slice]
    everyone = client.get("/api/v1/violations", params={"open_only": True}, headers=world["op"]).json()  # type: ignore[arg-type]
    assert [x["metric"] for x in everyone["data"]] == ["delay_p99_ms"]
    assert client.get(f"/api/v1/violations/{v[1].id}/explain", headers=world["red"]).status_code == 404  # type: ignore[arg-type]


def test_prometheus_metrics(client: TestClient, session: Session, world: dict[str, object]) -> None:
    ids = world["ids"]  # type: ignore[assignment]
    ingest(session, [_point(ids["red"][1], 2, 0, delay=25), _point(ids["red"][1], 2, 1, delay=3)], hold=HoldDown(1, 1))  # type: ignore[index]
    r = client.get("/metrics", headers=world["op"])  # type: ignore[arg-type]
    assert r.status_code == 200
    line = next(x for x in r.text.splitlines() if x.startswith("sliceportal_lane_delay_p99_seconds{"))
    assert 'tenant="red"' in line and 'slice="red-s"' in line and 'lane="2"' in line and 'source="testbed"' in line
    assert float(line.rsplit(" ", 1)[1]) == pytest.approx(0.003)  # base units: seconds
    assert "sliceportal_sla_violations_open" in r.text
    # the portal's own metrics beside the KPIs
    for name in (
        "sliceportal_deployments_total",
        "sliceportal_push_duration_seconds_bucket",
        "sliceportal_backend_reconcile_drift{",
        "sliceportal_http_request_duration_seconds_bucket{",
    ):
        assert name in r.text, name
    # by route template as clients call it (the world's slices were created by POST /api/v1/slices)
    assert 'method="POST",route="/api/v1/slices",status="201"' in r.text

    def compiles(text: str) -> float:  # this process's compiles for the P4 driver (the registry outlives tests)
        return next(
            (
                float(x.rsplit(" ", 1)[1])
                for x in text.splitlines()
                if x.startswith('sliceportal_compile_duration_seconds_count{driver="p4rt"}')
            ),
            0.0,
        )

    before = compiles(r.text)
    assert client.get(f"/api/v1/backends/{BMV2}/preview", headers=world["op"]).status_code == 200  # type: ignore[arg-type]
    assert compiles(client.get("/metrics", headers=world["op"]).text) == before + 1  # type: ignore[arg-type]
    assert client.get("/metrics").status_code == 401
    assert client.get("/metrics", headers=world["red"]).status_code == 403  # type: ignore[arg-type]


def test_retention_downsamples_and_expires(session: Session, world: dict[str, object]) -> None:
    slice_id = world["ids"]["red"][1]  # type: ignore[index]
    ingest(session, [_point(slice_id, 0, s) for s in range(120)])
    apply_retention(session, now=T0 + timedelta(hours=2))
    rows = session.scalars(select(KpiSample).order_by(KpiSample.ts)).all()
    assert [(r.interval_s, r.tx_packets) for r in rows] == [(60, 60_000), (60, 60_000)]
    apply_retention(session, now=T0 + timedelta(days=8))
    assert session.scalar(select(func.count()).select_from(KpiSample)) == 0


def test_hub_filters_per_tenant() -> None:
    async def run() -> tuple[list[int], list[int], list[int]]:
        hub = KpiHub()
        red = hub.subscribe(tenant_scope=1, slice_ids=None)
        operator = hub.subscribe(tenant_scope=None, slice_ids=None)
        only_20 = hub.subscribe(tenant_scope=None, slice_ids=frozenset({20}))
        hub.publish([_point(10, 0, 0), _point(20, 0, 0)], tenant_of={10: 1, 20: 2})
        await asyncio.sleep(0)
        got = [[p.slice_id for p in (await s.queue.get())] for s in (red, operator, only_20)]
        assert red.queue.empty()
        return got[0], got[1], got[2]

    assert asyncio.run(run()) == ([10], [10, 20], [20])


@pytest.mark.timeout(60)
def test_live_stream_is_filtered_on_the_server(client: TestClient, session: Session, world: dict[str, object]) -> None:
    import json
    import threading
    import time

    ids = world["ids"]  # type: ignore[assignment]
    red_slice, blue_slice = ids["red"][1], ids["blue"][1]  # type: ignore[index]
    hub: KpiHub = client.app.state.kpi_hub  # type: ignore[attr-defined]

    def publish_when_subscribed() -> None:
        for _ in range(200):
            if hub.subscribers:
                break
            time.sleep(0.05)
        ingest(session, [_point(blue_slice, 0, 0), _point(red_slice, 2, 0)])

    publisher = threading.Thread(target=publish_when_subscribed, daemon=True)
    publisher.start()
    with client.stream("GET", "/api/v1/kpis/stream", headers=world["red"]) as r:  # type: ignore[arg-type]
        assert r.headers["content-type"].startswith("text/event-stream")
        data = None
        for line in r.iter_lines():
            if line.startswith("data: "):
                data = json.loads(line[len("data: ") :])
                break
    publisher.join(10)  # the points arrive on commit, while ingest() may still be returning
    assert data is not None and [(p["slice_id"], p["lane"]) for p in data] == [(red_slice, 2)]


def test_samples_keyed_by_backend(client: TestClient, session: Session, world: dict[str, object]) -> None:
    """Two data planes measured in the same interval: two samples, never one overwriting the other."""
    red_slice = world["ids"]["red"][1]  # type: ignore[index]
    ingest(
        session,
        [
            _point(red_slice, lane, s, backend_id=b, delay=d)
            for s in range(3)
            for lane in (0, 2)
            for b, d in ((XDP, 1.0), (BMV2, 4.0))
        ],
    )
    assert session.scalar(select(func.count()).select_from(KpiSample)) == 3 * 2 * 2
    op = world["op"]
    window = {"since": (T0 - timedelta(seconds=1)).isoformat(), "until": (T0 + timedelta(seconds=9)).isoformat()}
    every = client.get(f"/api/v1/slices/{red_slice}/kpis", params=window, headers=op).json()  # type: ignore[arg-type]
    assert {(p["backend_id"], p["lane"]) for p in every} == {(XDP, 0), (XDP, 2), (BMV2, 0), (BMV2, 2)}
    bmv2 = client.get(f"/api/v1/slices/{red_slice}/kpis", params={**window, "backend_id": BMV2}, headers=op).json()  # type: ignore[arg-type]
    assert len(bmv2) == 6 and {p["delay_p99_ms"] for p in bmv2} == {4.0}
    grouped = client.get(
        f"/api/v1/slices/{red_slice}/kpis", params={**window, "group_by": "backend"}, headers=op
    ).json()  # type: ignore[arg-type]
    # per (backend, interval): both lanes summed (2 x 8 Mbit/s), 2 x 1000 packets
    assert [(p["backend_id"], p["lane"], p["throughput_bps"], p["tx_packets"]) for p in grouped[:2]] == [
        (XDP, None, 16e6, 2000),
        (BMV2, None, 16e6, 2000),
    ]
    assert len(grouped) == 6
    current = client.get(f"/api/v1/slices/{red_slice}/kpis/current", params={"backend_id": XDP}, headers=op).json()  # type: ignore[arg-type]
    assert [(p["backend_id"], p["lane"], p["ts"][:19]) for p in current] == [
        (XDP, 0, "2026-11-22T12:00:02"),
        (XDP, 2, "2026-11-22T12:00:02"),
    ]
    bad = client.get(f"/api/v1/slices/{red_slice}/kpis", params={"group_by": "tenant"}, headers=op)  # type: ignore[arg-type]
    assert bad.status_code == 422 and "group_by" in bad.text
    text = client.get("/metrics", headers=op).text  # type: ignore[arg-type]
    lines = [x for x in text.splitlines() if x.startswith("sliceportal_lane_delay_p99_seconds{") and 'lane="2"' in x]
    assert sorted((('backend="xdp-a"' in x), x.rsplit(" ", 1)[1]) for x in lines) == [(False, "0.004"), (True, "0.001")]


def test_migration_attributes_old_samples_to_the_xdp_backend(pg: object, session: Session) -> None:
    """0006 on a database that already holds samples: with one XDP backend they become its."""
    from sqlalchemy import create_engine, text

    from sliceportal.core.migrate import upgrade
    from sliceportal.core.pgembed import EmbeddedPostgres

    assert isinstance(pg, EmbeddedPostgres)
    name = "kpi_migration_probe"
    pg.create_database(name)
    url = pg.url(name)
    try:
        upgrade(url, "0004")
        engine = create_engine(url)
        with engine.begin() as conn:
            tenant = conn.execute(
                text(
                    "INSERT INTO tenant (name, vni, contact, description, version) "
                    "VALUES ('t', 7, '', '', 1) RETURNING id"
                )
            ).scalar_one()
            st = conn.execute(text("SELECT min(id) FROM slice_type")).scalar_one()
            sid = conn.execute(
                text(
                    "INSERT INTO slice (tenant_id, slice_type_id, name, description, path_mode, state, version) "
                    "VALUES (:t, :st, 's', '', 'per_slice', 'deployed', 1) RETURNING id"
                ),
                {"t": tenant, "st": st},
            ).scalar_one()
            xdp = conn.execute(
                text(
                    "INSERT INTO backend (name, driver, options, paths, lanes, capacity, health, health_detail,"
                    " version) "
                    "VALUES ('xdp-core', 'xdp', '{}', 8, 4, '{}', 'ok', '', 1) RETURNING id"
                )
            ).scalar_one()
            conn.execute(
                text(
                    "INSERT INTO kpi_sample (slice_id, lane, ts, interval_s, tx_packets, rx_packets, tx_bytes,"
                    " rx_bytes, "
                    "throughput_bps, loss_pct, drops, ecn_marks) VALUES (:s, 0, now(), 1, 1, 1, 1, 1, 8, 0, '{}', 0)"
                ),
                {"s": sid},
            )
            conn.execute(
                text(
                    "INSERT INTO sla_violation (slice_id, lane, metric, threshold, worst, started_at, detail) "
                    "VALUES (:s, 0, 'loss_pct', 1, 5, now(), '{}')"
                ),
                {"s": sid},
            )
        upgrade(url)
        with engine.begin() as conn:
            assert conn.execute(text("SELECT backend_id FROM kpi_sample")).scalars().all() == [xdp]
            assert conn.execute(text("SELECT backend_id FROM sla_violation")).scalars().all() == [xdp]
        engine.dispose()
    finally:
        admin = create_engine(pg.url("postgres"), isolation_level="AUTOCOMMIT")
        with admin.connect() as conn:
            conn.execute(text(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)'))
        admin.dispose()


def test_long_ranges_are_binned(client: TestClient, session: Session, world: dict[str, object]) -> None:
    """step_s=10 over 20 one-second samples of a lane: two bins, counts summed, throughput over
    the time measured, the worst p99, newest bin last."""
    red_slice = world["ids"]["red"][1]  # type: ignore[index]
    ingest(session, [_point(red_slice, 0, s, delay=1.0 + s) for s in range(1, 21)])
    window = {"since": T0.isoformat(), "until": (T0 + timedelta(seconds=20)).isoformat(), "step_s": 10}
    bins = client.get(f"/api/v1/slices/{red_slice}/kpis", params=window, headers=world["op"]).json()  # type: ignore[arg-type]
    assert [
        (b["ts"][11:19], b["interval_s"], b["tx_packets"], b["throughput_bps"], b["delay_p99_ms"]) for b in bins
    ] == [("12:00:10", 10.0, 10_000, 8e6, 11.0), ("12:00:20", 10.0, 10_000, 8e6, 21.0)]
    assert (
        client.get(f"/api/v1/slices/{red_slice}/kpis", params={**window, "step_s": 1}, headers=world["op"]).status_code
        == 422
    )  # type: ignore[arg-type]
    naive = client.get(f"/api/v1/slices/{red_slice}/kpis", params={"since": "2026-11-22T12:00:00"}, headers=world["op"])  # type: ignore[arg-type]
    assert naive.status_code == 422
