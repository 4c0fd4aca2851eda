"""Bench: the KPI collector's cost per backend per interval, and the points/s the ingest path holds.

Run: .venv/bin/python bench/kpi_collector.py

A private PostgreSQL with the demo data. Two measurements:

1. Collector: ``KpiCollector.run_once`` over N backends whose drivers answer from memory with
   counters that grow every interval (one IR slice, 8 target lanes, a delay histogram per
   lane, ``slice_lanes`` as the P4 driver gives them): the time the collector itself spends
   per backend and interval (reads, deltas, percentiles, the interval's one ``ingest``), so
   the data plane's own answer time is left out. Baseline in the same run: ``kpi.store.ingest``
   of the same points alone (what any source pays to store them).
2. Ingest: batches of 2 000 points (the ingest API's maximum) through ``kpi.store.ingest``
   (insert, SLA evaluation, NOTIFY), and through the HTTP route ``POST /api/v1/kpis/ingest``
   (pydantic validation, existence checks) with a telemetry key; goal >= 50 000 points/s.
"""

from __future__ import annotations

import os
import statistics
import sys
import time
from datetime import UTC, datetime, timedelta
from typing import Any

from _results import Results, quick
from fastapi.testclient import TestClient
from sqlalchemy import select
from stack_common import database

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.core.security import hash_password
from sliceportal.drivers.contract import DELAY_BUCKETS, Counters, DelayHistogram, LaneCounters
from sliceportal.kpi.collector import KpiCollector
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import (
    Backend,
    Deployment,
    DeploymentKind,
    DeploymentStatus,
    Role,
    RuleSet,
    Slice,
    User,
)
from sliceportal.services.bootstrap_data import seed_demo

LANES = 8


def counters_at(step: int, epoch: str = "bench") -> Counters:
    """One IR slice (1) with traffic in every lane, grown by ``step`` intervals."""
    lanes = {}
    for lane in range(LANES):
        n = step * 1000 * (lane + 1)
        buckets = [0] * DELAY_BUCKETS
        buckets[4], buckets[7] = n * 9 // 10, n - n * 9 // 10
        lanes[f"1/{lane}"] = LaneCounters(packets=n, bytes=n * 800, tx_packets=n - step, tx_bytes=(n - step) * 800,
                                          drops={"vqueue_burst": step}, ecn_marks=step,
                                          delay=DelayHistogram(unit_ns=1000, count=n, sum=n * 40, max=200,
                                                               buckets=tuple(buckets)))
    return Counters(timestamp=time.time(), epoch=epoch, slice_lanes=lanes)


def rule_set_for(session: Any, backend: Backend, slice_id: int) -> None:
    """A stored rule set placing IR slice 1's target lanes on the portal slice's catalogue lanes."""
    rs = RuleSet(backend_id=backend.id, number=1, digest=f"bench{backend.id}",
                 ir={"slices": [{"slice_id": 1, "ref": slice_id}], "rules": []}, plan={},
                 explanation={"slices": [{"ref": slice_id, "lane_map": [[i, i] for i in range(LANES)]}]})
    session.add(rs)
    session.flush()
    # in force: the last finished successful deploy put it there (models.queries.current_rule_set)
    session.add(Deployment(backend_id=backend.id, rule_set_id=rs.id, kind=DeploymentKind.DEPLOY,
                           status=DeploymentStatus.SUCCEEDED, finished_at=datetime.now(UTC), duration_s=0.1))


def main() -> None:
    res = Results("kpi_collector")
    with database() as pg:  # private, migrated, removed afterwards (stack_common)
        url = pg.url()
        sessions = session_factory(url)
        with sessions() as session:
            seed_demo(session, users_per_slice=1)
            slice_ids = list(session.scalars(select(Slice.id).order_by(Slice.id)))
        collector_bench(res, sessions, slice_ids)
        ingest_bench(res, sessions, url, slice_ids)
    res.write()


def collector_bench(res: Results, sessions: Any, slice_ids: list[int]) -> None:
    table = res.table("KPI collector: time per backend per interval (drivers answer from memory)",
                      ["backends", "points / interval", "collector ms / interval", "ms / backend",
                       "ingest alone ms / interval"])
    for n in (4, 16) if quick() else (4, 16, 64):
        with sessions() as session:
            backends = [Backend(name=f"bench-{n}-{i}", driver="p4rt") for i in range(n)]
            session.add_all(backends)
            session.flush()
            for i, b in enumerate(backends):
                rule_set_for(session, b, slice_ids[i % len(slice_ids)])
            session.commit()
            ids = {b.id for b in backends}
        step = {"n": 0}

        def read(_session: Any, backend: Backend, step: dict[str, int] = step) -> Counters:
            return counters_at(step["n"])

        others = {b.id for b in _all_backends(sessions)} - ids  # earlier sizes' backends: skipped
        collector = KpiCollector(sessions, read, 1.0, skip=lambda others=others: others)  # type: ignore[misc]
        times, points = [], 0
        rounds = 4 if quick() else 10
        for r in range(rounds + 1):
            step["n"] = r + 1
            t0 = time.perf_counter()
            got = collector.run_once()
            if r:  # the first interval is every backend's baseline
                times.append(time.perf_counter() - t0)
                points = len(got)
        collector.stop()
        # baseline: the same points stored alone
        base = []
        for r in range(rounds):
            ts = datetime.now(UTC) + timedelta(seconds=r + 1000 + n)
            pts = [KpiPoint(slice_id=slice_ids[i % len(slice_ids)], backend_id=b, lane=lane, source="counters",
                            ts=ts, rx_packets=1000, tx_packets=1000) for i, b in enumerate(sorted(ids))
                   for lane in range(LANES)]
            with sessions() as session:
                t0 = time.perf_counter()
                ingest(session, pts)
                base.append(time.perf_counter() - t0)
        med, base_med = statistics.median(times), statistics.median(base)
        table.rows.append([n, points, round(med * 1e3, 1), round(med * 1e3 / n, 2), round(base_med * 1e3, 1)])
        res.figure(f"collector, {n} backends: ms per backend per interval", med * 1e3 / n, "ms",
                   baseline=base_med * 1e3 / n, baseline_name="storing the same points alone",
                   note=f"median of {rounds} intervals, {points} points each")
        print(table.rows[-1], flush=True)


def _all_backends(sessions: Any) -> list[Backend]:
    with sessions() as session:
        return list(session.scalars(select(Backend)))


def ingest_bench(res: Results, sessions: Any, url: str, slice_ids: list[int]) -> None:
    with sessions() as session:
        backend = Backend(name="bench-ingest", driver="p4rt")
        session.add(backend)
        session.commit()
        bid = backend.id
    batch, batches = 2000, (4 if quick() else 10)
    t_start = datetime(2020, 1, 1, tzinfo=UTC)  # the ingest API refuses points from the future

    def points(k: int) -> list[KpiPoint]:
        return [KpiPoint(slice_id=slice_ids[i % len(slice_ids)], backend_id=bid, lane=i % LANES, source="probe",
                         ts=t_start + timedelta(seconds=k * batch + i), rx_packets=10, tx_packets=10,
                         delay_p99_ms=1.0) for i in range(batch)]

    store_times = []
    for k in range(batches):
        pts = points(k)
        with sessions() as session:
            t0 = time.perf_counter()
            ingest(session, pts)
            store_times.append(time.perf_counter() - t0)
    store_rate = batch / statistics.median(store_times)
    settings = Settings(secret_key=os.urandom(24).hex(), reconcile_interval_s=0)
    app = create_app(settings, url)
    app.state.telemetry_rate_limit = "100000/minute"
    http_times = []
    with TestClient(app) as client:
        with sessions() as session:
            session.add(User(username="bench-op", password_hash=hash_password("bench-password-1234567"),
                             role=Role.OPERATOR))
            session.commit()
        tok = client.post("/api/v1/login/access-token",
                          data={"username": "bench-op", "password": "bench-password-1234567"}).json()["access_token"]
        key = client.post("/api/v1/api-keys", json={"name": "bench", "scopes": ["telemetry"]},
                          headers={"Authorization": f"Bearer {tok}"}).json()["secret"]
        for k in range(batches):
            body = {"points": [p.model_dump(mode="json") for p in points(1000 + k)]}
            t0 = time.perf_counter()
            r = client.post("/api/v1/kpis/ingest", json=body, headers={"X-API-Key": key})
            http_times.append(time.perf_counter() - t0)
            assert r.status_code == 201, r.text
    http_rate = batch / statistics.median(http_times)
    res.figure("ingest through kpi.store.ingest (2 000-point batches)", store_rate, "points/s",
               goal=">= 50000", met=store_rate >= 50_000, note=f"median of {batches} batches")
    res.figure("ingest through POST /api/v1/kpis/ingest (2 000-point batches)", http_rate, "points/s",
               baseline=store_rate, baseline_name="kpi.store.ingest alone", goal=">= 50000",
               met=http_rate >= 50_000, note=f"median of {batches} batches, TestClient in process")
    print({"store points/s": round(store_rate), "http points/s": round(http_rate)}, flush=True)


if __name__ == "__main__":
    sys.exit(main())
