"""Bench: the KPI collector's cost per backend per interval, and the points/s the ingest path holds.

Run: .venv/bin/python bench/kpi_collector.py

A private PostgreSQL with the demo data. Two measurements:

1. Collector: ``KpiCollector.run_once`` over N backends whose drivers answer from memory with
   counters that grow every interval (one IR slice, 8 target lanes, a delay histogram per
   lane, ``slice_lanes`` as the P4 driver gives them): the time the collector itself spends
   per backend and interval (reads, deltas, percentiles, the interval's one ``ingest``), so
   the data plane's own answer time is left out. Baseline in the same run: ``kpi.store.ingest``
   of the same points alone (what any source pays to store them).
2. Ingest: batches of 1 000 and 10 000 points, one client and four at once (threads, each
   with its own backends), through ``kpi.store.ingest`` (insert, SLA evaluation, NOTIFY,
   commit) against the baseline of PostgreSQL storing the same rows with the same statement
   alone; and batches of 1 000 and 2 000 (the route's maximum) through the HTTP route
   ``POST /api/v1/kpis/ingest`` (pydantic validation, existence checks) with a telemetry key.
   Goal >= 50 000 points/s.
"""

from __future__ import annotations

import json
import os
import statistics
import sys
import time
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

from _results import Results, quick
from fastapi.testclient import TestClient
from sqlalchemy import select, update
from stack_common import PASSWORD, USER, demo_database

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
from sliceportal.core.db import session_factory
from sliceportal.drivers.contract import DELAY_BUCKETS, Counters, DelayHistogram, LaneCounters
from sliceportal.kpi.collector import KpiCollector
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, Deployment, DeploymentKind, DeploymentStatus, RuleSet, Slice

LANES = 8
JSON = {"content-type": "application/json"}


def counters_at(step: int, epoch: str = "bench") -> Counters:
    """One IR slice (1) with traffic in every lane, grown by ``step`` intervals."""
    lanes = {}
    for lane in range(LANES):
        n = step * 1000 * (lane + 1)
        buckets = [0] * DELAY_BUCKETS
        buckets[4], buckets[7] = n * 9 // 10, n - n * 9 // 10
        lanes[f"1/{lane}"] = LaneCounters(
            packets=n,
            bytes=n * 800,
            tx_packets=n - step,
            tx_bytes=(n - step) * 800,
            drops={"vqueue_burst": step},
            ecn_marks=step,
            delay=DelayHistogram(unit_ns=1000, count=n, sum=n * 40, max=200, buckets=tuple(buckets)),
        )
    return Counters(timestamp=time.time(), epoch=epoch, slice_lanes=lanes)


def rule_set_for(session: Any, backend: Backend, slice_id: int) -> None:
    """A stored rule set placing IR slice 1's target lanes on the portal slice's catalogue lanes."""
    rs = RuleSet(
        backend_id=backend.id,
        number=1,
        digest=f"bench{backend.id}",
        ir={"slices": [{"slice_id": 1, "ref": slice_id}], "rules": []},
        plan={},
        explanation={"slices": [{"ref": slice_id, "lane_map": [[i, i] for i in range(LANES)]}]},
    )
    session.add(rs)
    session.flush()
    # in force: the last finished successful deploy put it there (models.queries.current_rule_set)
    session.add(
        Deployment(
            backend_id=backend.id,
            rule_set_id=rs.id,
            kind=DeploymentKind.DEPLOY,
            status=DeploymentStatus.SUCCEEDED,
            finished_at=datetime.now(UTC),
            duration_s=0.1,
        )
    )


def main() -> None:
    res = Results("kpi_collector")
    with demo_database(users_per_slice=1) as url:  # private, migrated, removed afterwards (stack_common)
        sessions = session_factory(url)
        with sessions() as session:
            slice_ids = list(session.scalars(select(Slice.id).order_by(Slice.id)))
        collector_bench(res, sessions, slice_ids)
        ingest_bench(res, sessions, url, slice_ids)
    res.write()


def collector_bench(res: Results, sessions: Any, slice_ids: list[int]) -> None:
    table = res.table(
        "KPI collector: time per backend per interval (drivers answer from memory)",
        ["backends", "points / interval", "collector ms / interval", "ms / backend", "ingest alone ms / interval"],
    )
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

        collector = KpiCollector(sessions, read, 1.0)
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
            pts = [
                KpiPoint(
                    slice_id=slice_ids[i % len(slice_ids)],
                    backend_id=b,
                    lane=lane,
                    source="counters",
                    ts=ts,
                    rx_packets=1000,
                    tx_packets=1000,
                )
                for i, b in enumerate(sorted(ids))
                for lane in range(LANES)
            ]
            with sessions() as session:
                t0 = time.perf_counter()
                ingest(session, pts)
                base.append(time.perf_counter() - t0)
        with sessions() as session:  # a backend found down is not read: the next size reads its own only
            session.execute(update(Backend).where(Backend.id.in_(ids)).values(health="down"))
            session.commit()
        med, base_med = statistics.median(times), statistics.median(base)
        table.rows.append([n, points, round(med * 1e3, 1), round(med * 1e3 / n, 2), round(base_med * 1e3, 1)])
        res.figure(
            f"collector, {n} backends: ms per backend per interval",
            med * 1e3 / n,
            "ms",
            baseline=base_med * 1e3 / n,
            baseline_name="storing the same points alone",
            note=f"median of {rounds} intervals, {points} points each",
        )
        print(table.rows[-1], flush=True)


BACKENDS_PER_CLIENT = 40  # x the demo's 3 slices x 8 lanes: 960 points per interval and client


def _stream(slice_ids: list[int], backends: list[int], start: int, n: int) -> list[KpiPoint]:
    """Points ``start`` .. ``start + n`` of one client's stream, interval after interval: every
    (slice, backend, lane) once per interval, as a collector or a fleet of probes posts them."""
    per = len(slice_ids) * len(backends) * LANES
    t0 = datetime(2020, 1, 1, tzinfo=UTC)  # the ingest API refuses points from the future
    out = []
    for i in range(start, start + n):
        k, c = divmod(i, per)
        s, rest = divmod(c, len(backends) * LANES)
        b, lane = divmod(rest, LANES)
        out.append(
            KpiPoint(
                slice_id=slice_ids[s],
                backend_id=backends[b],
                lane=lane,
                source="probe",
                ts=t0 + timedelta(seconds=k),
                rx_packets=10,
                tx_packets=10,
                tx_bytes=8000,
                rx_bytes=8000,
                throughput_bps=64000.0,
                delay_p99_ms=1.0,
                jitter_ms=0.1,
            )
        )
    return out


def _upsert_alone(sessions: Any, points: list[KpiPoint]) -> None:
    """The baseline: the same rows stored by the same one statement, without SLA evaluation or NOTIFY."""
    from sliceportal.kpi.store import _insert

    with sessions() as session:
        _insert(session, points)
        session.commit()


def _ingest(sessions: Any, points: list[KpiPoint]) -> None:
    with sessions() as session:
        ingest(session, points)


def ingest_bench(res: Results, sessions: Any, url: str, slice_ids: list[int]) -> None:
    clients_max = 4
    with sessions() as session:
        fleet = [
            [Backend(name=f"bench-ingest-{c}-{i}", driver="p4rt") for i in range(BACKENDS_PER_CLIENT)]
            for c in range(clients_max)
        ]
        session.add_all([b for bs in fleet for b in bs])
        session.commit()
        ids = [[b.id for b in bs] for bs in fleet]
    offset = [0] * clients_max  # each client's position in its own stream: no key is stored twice

    def run(fn: Any, batch: int, clients: int, rounds: int) -> float:
        """Points per second: ``clients`` threads each storing ``rounds`` batches, wall time."""
        work = []
        for c in range(clients):
            work.append([_stream(slice_ids, ids[c], offset[c] + r * batch, batch) for r in range(rounds)])
            offset[c] += rounds * batch
        t0 = time.perf_counter()
        with ThreadPoolExecutor(clients) as pool:
            for f in [pool.submit(lambda mine=mine: [fn(sessions, pts) for pts in mine]) for mine in work]:
                f.result()
        return clients * rounds * batch / (time.perf_counter() - t0)

    table = res.table(
        "Ingest path: points/s through kpi.store.ingest (insert, SLA evaluation, NOTIFY, commit)",
        ["batch", "clients", "points/s", "PostgreSQL upsert alone, points/s", "ratio"],
        note="each client its own 40 backends x 3 slices x 8 lanes, interval after interval; "
        "baseline: the same rows through the same one statement without SLA or NOTIFY, "
        "measured alternately in the same run",
    )
    for batch in (1_000, 10_000):
        rounds = (3 if quick() else 8) if batch == 1_000 else (2 if quick() else 4)
        for clients in (1, clients_max):
            base = run(_upsert_alone, batch, clients, rounds)
            rate = run(_ingest, batch, clients, rounds)
            table.rows.append([batch, clients, round(rate), round(base), round(rate / base, 2)])
            res.figure(
                f"ingest through kpi.store.ingest ({batch}-point batches, {clients} client(s))",
                rate,
                "points/s",
                baseline=base,
                baseline_name="PostgreSQL upsert of the same rows alone",
                goal=">= 50000",
                met=rate >= 50_000,
                note=f"{rounds} batches per client",
            )
            print(table.rows[-1], flush=True)

    settings = Settings(secret_key=os.urandom(24).hex(), reconcile_interval_s=0)
    app = create_app(settings, url)
    app.state.telemetry_rate_limit = "100000/minute"
    with TestClient(app) as client:  # as the operator database() made
        login = {"username": USER, "password": PASSWORD}
        tok = client.post("/api/v1/login/access-token", data=login).json()["access_token"]
        key = client.post(
            "/api/v1/api-keys",
            json={"name": "bench", "scopes": ["telemetry"]},
            headers={"Authorization": f"Bearer {tok}"},
        ).json()["secret"]
        for batch in (1_000, 2_000):  # 2 000: the route's maximum
            rounds = 3 if quick() else 6
            store_rate = run(_ingest, batch, 1, rounds)
            times = []
            for _ in range(rounds):
                points = _stream(slice_ids, ids[0], offset[0], batch)
                offset[0] += batch
                # encoded before the clock starts: a client's JSON encoding (here in the same
                # process as the server) is not the server's cost
                body = json.dumps({"points": [p.model_dump(mode="json") for p in points]}).encode()
                t0 = time.perf_counter()
                r = client.post("/api/v1/kpis/ingest", content=body, headers={"X-API-Key": key, **JSON})
                times.append(time.perf_counter() - t0)
                assert r.status_code == 201, r.text
            http_rate = batch / statistics.median(times)
            res.figure(
                f"ingest through POST /api/v1/kpis/ingest ({batch}-point batches, 1 client)",
                http_rate,
                "points/s",
                baseline=store_rate,
                baseline_name="kpi.store.ingest alone, same batches",
                goal=">= 50000",
                met=http_rate >= 50_000,
                note=f"median of {rounds} requests, TestClient in process, bodies encoded beforehand",
            )
            print({"batch": batch, "store points/s": round(store_rate), "http points/s": round(http_rate)}, flush=True)


if __name__ == "__main__":
    sys.exit(main())
