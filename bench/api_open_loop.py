"""Bench: open-loop mixed load on the API, and the knee (issue #28, last row of its table).

Closed-loop clients (``api_load``) slow down with the server and hide its queueing; here
requests are *scheduled* at a fixed rate whatever the server does (no coordinated omission):
vegeta (Go, built by ``scripts/bench_tools.sh``) sends each request when it is due, on as many
connections as that takes, and times it from then. Per offered rate: p50 / p99 of the mix,
what was achieved (successful answers per second), errors. (A Python client took a fifth to
two thirds of a core at these rates, from the two cores the server has.)

The stack as ``make run`` serves it: a private PostgreSQL, uvicorn with two workers on the two
cores, real HTTP on loopback. The world: one Flexible Slice of 10 000 subscribers, and ten
minutes of per-lane KPI samples for it (written by SQL: no data plane, no testbed -- the
requests are what is measured), assigned to three registered backends. The mix, as a dashboard-heavy day looks:

* 45 % ``GET /slices/{id}``, 25 % ``GET /slices?limit=50``,
* 20 % ``GET /slices/{id}/kpis?lane=0`` (the last 5 minutes, 300 samples),
* 10 % ``POST /subscribers`` (a new UE each).

Figures: p99 at 200 requests/s (goal <= 50 ms) against p99 at the lowest rate of the same run,
and the knee, the lowest rate whose p99 passes 100 ms. Past saturation (less than 90 % of the
offered rate achieved) higher rates are not run: they only queue longer. The load generator runs on the same two
cores (its own CPU is in the table): on this machine it is part of what the server competes with.

    .venv/bin/python bench/api_open_loop.py     # BENCH_QUICK=1: three rates, 4 s each
"""

from __future__ import annotations

import base64
import json
import random
import resource
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

import httpx
import psycopg
from _results import Results, quick
from stack_common import SCALE_TENANT, TABLE2_SERVICES, database, scale_subscribers, serve

SUBSCRIBERS = 10_000
RATES = (50, 100, 200) if quick() else (50, 100, 150, 200, 250, 300, 400)
SECONDS = 4.0 if quick() else 15.0
GOAL_RATE, GOAL_P99_MS, KNEE_P99_MS = 200, 50.0, 100.0
SATURATED = 0.9  # achieved below this share of the offered rate: the server is saturated


@dataclass
class Step:
    rate: int
    achieved: float
    p50_ms: float
    p99_ms: float
    errors: int
    client_cpu_pct: float


def world(base: str, headers: dict[str, str], pg_conn: psycopg.Connection) -> tuple[int, int]:
    """The slice of SUBSCRIBERS subscribers and its KPI samples; (slice id, tenant id)."""
    tenant = httpx.post(f"{base}/api/v1/tenants", headers=headers, json={**SCALE_TENANT, "ue_pool": "10.0.0.0/8"})
    tenant.raise_for_status()
    types = httpx.get(f"{base}/api/v1/slice-types", headers=headers, params={"limit": 100}).json()["data"]
    flexible = next(t["id"] for t in types if t["name"] == "Flexible Slice")
    # assigned to three backends, as slice_status_scale's: a slice's status is read from each
    # one's stored state. Registered only (nothing listens there, no controller probes them):
    # the reads are what is measured, not the data planes.
    backends = [
        httpx.post(
            f"{base}/api/v1/backends",
            headers=headers,
            json={"name": f"edge-{i}", "driver": "p4rt", "options": {"address": f"127.0.0.1:{9 + i}"}},
        )
        for i in range(3)
    ]
    for b in backends:
        b.raise_for_status()
    sl = httpx.post(
        f"{base}/api/v1/slices",
        headers=headers,
        json={
            "name": "embb",
            "tenant_id": tenant.json()["id"],
            "slice_type_id": flexible,
            "sla": {"rate_limit_mbps": 100},
            "services": TABLE2_SERVICES,
            "backend_ids": [b.json()["id"] for b in backends],
        },
    )
    sl.raise_for_status()
    csv = "imsi,ue_ip,teids,tenant,slices\n" + "".join(f"{row}\n" for row in scale_subscribers(range(SUBSCRIBERS)))
    r = httpx.post(
        f"{base}/api/v1/subscribers/import",
        headers=headers,
        timeout=600,
        files={"file": ("s.csv", csv.encode(), "text/csv")},
    )
    assert r.status_code == 201, r.text[:300]
    sid = int(sl.json()["id"])
    pg_conn.execute(
        "INSERT INTO kpi_sample (slice_id, backend_id, lane, source, ts, interval_s, tx_packets, rx_packets,"
        " tx_bytes, rx_bytes, throughput_bps, loss_pct, delay_p99_ms, jitter_ms, drops, ecn_marks)"
        " SELECT %s, %s, lane, 'counters', ts, 1.0, 1000, 990, 1000000, 990000, 7920000, 1.0, 2.5, 0.3, '{}', 0"
        " FROM generate_series(now() - interval '10 minutes', now(), interval '1 second') AS ts,"
        " generate_series(0, 6, 2) AS lane",
        (sid, backends[0].json()["id"]),  # its traffic crosses the first
    )
    return sid, int(tenant.json()["id"])


VEGETA = Path(__file__).resolve().parents[1] / ".tools" / "bin" / "vegeta"  # scripts/bench_tools.sh


def targets(base: str, headers: dict[str, str], sid: int, tenant_id: int, rate: int, seq: list[int]) -> bytes:
    """The mix's requests for one rate, in vegeta's JSON target format (one a line, in order)."""
    rng = random.Random(rate)
    auth = {name: [value] for name, value in headers.items()}
    lines = []
    for _ in range(int(rate * SECONDS)):
        x = rng.random()
        if x < 0.45:
            t: dict[str, object] = {"method": "GET", "url": f"{base}/api/v1/slices/{sid}", "header": auth}
        elif x < 0.70:
            t = {"method": "GET", "url": f"{base}/api/v1/slices?limit=50", "header": auth}
        elif x < 0.90:
            t = {"method": "GET", "url": f"{base}/api/v1/slices/{sid}/kpis?lane=0", "header": auth}
        else:
            seq[0] += 1
            n = seq[0]
            body = {"tenant_id": tenant_id, "imsi": f"00199{n:010d}", "ue_ip": f"10.250.{n // 256 % 256}.{n % 256}"}
            t = {
                "method": "POST",
                "url": f"{base}/api/v1/subscribers",
                "header": {**auth, "Content-Type": ["application/json"]},
                "body": base64.b64encode(json.dumps(body).encode()).decode(),
            }
        lines.append(json.dumps(t))
    return ("\n".join(lines) + "\n").encode()


def run_rate(base: str, headers: dict[str, str], sid: int, tenant_id: int, rate: int, seq: list[int]) -> Step:
    """One rate offered by vegeta (its pacer sends each request when it is due, on as many
    connections as that takes) and its report."""
    with tempfile.TemporaryDirectory(prefix="bench-vegeta-") as tmp:
        path = Path(tmp) / "targets.json"
        path.write_bytes(targets(base, headers, sid, tenant_id, rate, seq))
        cpu0 = resource.getrusage(resource.RUSAGE_CHILDREN)
        t0 = time.perf_counter()
        attack = subprocess.run(
            [
                str(VEGETA),
                "attack",
                "-format=json",
                f"-targets={path}",
                f"-rate={rate}/s",
                f"-duration={SECONDS}s",
                "-max-workers=1024",
                "-timeout=30s",
                "-keepalive=true",
            ],
            capture_output=True,
            check=True,
        )
        wall = time.perf_counter() - t0
        cpu1 = resource.getrusage(resource.RUSAGE_CHILDREN)
        report = json.loads(
            subprocess.run(
                [str(VEGETA), "report", "-type=json"], input=attack.stdout, capture_output=True, check=True
            ).stdout
        )
    ok = sum(n for code, n in report["status_codes"].items() if code.startswith("2"))
    cpu = (cpu1.ru_utime - cpu0.ru_utime) + (cpu1.ru_stime - cpu0.ru_stime)
    return Step(
        rate,
        report["throughput"],
        report["latencies"]["50th"] / 1e6,
        report["latencies"]["99th"] / 1e6,
        report["requests"] - ok,
        100 * cpu / wall,
    )


def main() -> None:
    if not VEGETA.exists():
        raise SystemExit(f"{VEGETA} is missing: scripts/bench_tools.sh builds it (make bench runs it)")
    res = Results("api_open_loop")
    steps: list[Step] = []
    with database() as pg, serve(pg, workers=2) as st:
        with psycopg.connect(
            host=str(pg.sock), port=pg.port, user="postgres", password=pg.password(), dbname="bench", autocommit=True
        ) as conn:
            sid, tenant_id = world(st.base, st.headers, conn)
        seq = [0]
        run_rate(st.base, st.headers, sid, tenant_id, RATES[0], seq)  # warm-up, not kept
        for rate in RATES:
            step = run_rate(st.base, st.headers, sid, tenant_id, rate, seq)
            steps.append(step)
            print(
                f"{rate:4d}/s offered, {step.achieved:6.1f}/s achieved: p50 {step.p50_ms:7.1f} ms, "
                f"p99 {step.p99_ms:8.1f} ms, {step.errors} errors, client {step.client_cpu_pct:.0f} % CPU"
            )
            if step.achieved < SATURATED * rate:
                break  # past saturation every higher rate only queues longer (and takes longer to run)
    low = steps[0]
    # a goal rate past saturation was not run: its p99 is at least that of the saturated step
    at_goal = next((s for s in steps if s.rate == GOAL_RATE), steps[-1] if steps[-1].rate < GOAL_RATE else None)
    if at_goal is not None:
        res.figure(
            f"open-loop mix at {GOAL_RATE} requests/s, p99"
            + ("" if at_goal.rate == GOAL_RATE else f" (saturated at {at_goal.rate}/s: at least this)"),
            at_goal.p99_ms,
            "ms",
            baseline=low.p99_ms,
            baseline_name=f"p99 of the same mix at {low.rate} requests/s, same run",
            goal=f"<= {GOAL_P99_MS:g} ms",
            met=at_goal.p99_ms <= GOAL_P99_MS and at_goal.errors == 0,
            note=f"{SUBSCRIBERS} subscribers, 2 API workers, no testbed; {at_goal.errors} errors",
        )
    knee = next((s.rate for s in steps if s.p99_ms > KNEE_P99_MS), None)
    res.figure(
        "open-loop knee (lowest offered rate with p99 over 100 ms)",
        float(knee) if knee is not None else float(RATES[-1]),
        "requests/s",
        note="the knee" if knee is not None else f"not reached up to {RATES[-1]} requests/s: this is the highest rate",
    )
    table = res.table(
        f"Open-loop mixed load, {SUBSCRIBERS:,} subscribers, 2 API workers (ms from when each request was due)",
        ["offered /s", "achieved /s", "p50 ms", "p99 ms", "errors", "load generator CPU %"],
    )
    for s in steps:
        table.rows.append(
            [s.rate, round(s.achieved, 1), round(s.p50_ms, 1), round(s.p99_ms, 1), s.errors, round(s.client_cpu_pct)]
        )
    res.write()


if __name__ == "__main__":
    main()
