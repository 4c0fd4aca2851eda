"""Bench: 100 concurrent live dashboard streams — how late does each update arrive?

Run: .venv/bin/python bench/kpi_streams.py [--streams 100] [--seconds 15]

A real stack (private PostgreSQL, the API under uvicorn, httpx clients over loopback).
Inside the server, a producer closes one interval per second: it stores KPI samples for
16 slices x 8 lanes through the KPI service (insert, SLA check, publish) exactly as the
live testbed does. Each client holds a server-sent-event stream, as a tenant or operator
dashboard does, and records the delay from the interval's close to the update's arrival.
Baseline in the same run: the same with a single stream.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import textwrap
import time
from datetime import datetime

import httpx
from _results import Results, quick
from stack_common import stack

SLICES, LANES = 16, 8

# Started inside the server process: one interval per second through the KPI service.
PRODUCER = textwrap.dedent("""
    import threading, time
    from datetime import UTC, datetime
    from sliceportal.asgi import app
    from sliceportal.kpi.points import KpiPoint
    from sliceportal.kpi.store import ingest

    def produce():
        while True:
            time.sleep(1 - time.time() % 1)
            ts = datetime.now(UTC)
            points = [KpiPoint(slice_id=s, backend_id=1, lane=l, ts=ts, rx_packets=1000, throughput_bps=8e6,
                               loss_pct=0.0, delay_p99_ms=1.0) for s in range(1, {slices} + 1) for l in range({lanes})]
            with app.state.sessionmaker() as session:
                ingest(session, points)

    threading.Thread(target=produce, daemon=True).start()
""").format(slices=SLICES, lanes=LANES)


async def listen(base: str, headers: dict[str, str], seconds: float, delays: list[float]) -> int:
    updates = 0
    async with (httpx.AsyncClient(base_url=base, timeout=None) as client,
                client.stream("GET", "/api/v1/kpis/stream", headers=headers) as r):
        end = time.time() + seconds
        async for line in r.aiter_lines():
            if line.startswith("data: "):
                points = json.loads(line[6:])
                closed = datetime.fromisoformat(points[0]["ts"]).timestamp()
                delays.append(time.time() - closed)
                updates += 1
            if time.time() > end:
                break
    return updates


async def run_streams(base: str, headers: dict[str, str], n: int, seconds: float) -> tuple[list[float], int]:
    delays: list[float] = []
    counts = await asyncio.gather(*(listen(base, headers, seconds, delays) for _ in range(n)))
    return delays, sum(counts)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--streams", type=int, default=100)
    ap.add_argument("--seconds", type=float, default=15)
    args = ap.parse_args()
    if quick():
        args.seconds = min(args.seconds, 5)
    res = Results("kpi_streams")
    prepare = ("INSERT INTO tenant (name, vni, contact, description, version) VALUES ('t', 1, '', '', 1)",
               "INSERT INTO backend (name, driver, options, paths, lanes, capacity, health, health_detail, version) "
               "VALUES ('b', 'xdp', '{}', 8, 4, '{}', 'ok', '', 1)",
               *(f"INSERT INTO slice (tenant_id, slice_type_id, name, description, path_mode, state, version) "
                 f"VALUES (1, 1, 's{s}', '', 'per_slice', 'deployed', 1)" for s in range(1, SLICES + 1)))
    code = PRODUCER + "\nimport os, uvicorn\nuvicorn.run(app, port=int(os.environ['PORT']), log_level='warning')\n"
    with stack(server_code=code, prepare_sql=prepare) as st:
        base, headers = st.base, st.headers
        results = {}
        for n in (1, args.streams):
            delays, updates = asyncio.run(run_streams(base, headers, n, args.seconds))
            delays.sort()
            results[n] = (statistics.median(delays), delays[int(0.99 * (len(delays) - 1))], max(delays), updates)
        b50 = results[1][0]
        print(f"{SLICES} slices x {LANES} lanes stored and published once a second, {args.seconds:.0f} s:")
        for n, (p50, p99, worst, updates) in results.items():
            print(f"  {n:4d} stream(s): {updates} updates, delay after the interval closed p50 {p50 * 1000:6.1f} ms, "
                  f"p99 {p99 * 1000:6.1f} ms, max {worst * 1000:6.1f} ms  (p50 x{p50 / b50:.1f} of one stream)")
        print(f"  every update within 1 s: {results[args.streams][2] < 1.0}")
        table = res.table(f"KPI stream delay after the interval closed ({SLICES} slices x {LANES} lanes, 1 Hz)",
                          ["streams", "updates", "p50 ms", "p99 ms", "max ms"])
        for n, (p50, p99, worst, updates) in results.items():
            table.rows.append([n, updates, round(p50 * 1e3, 1), round(p99 * 1e3, 1), round(worst * 1e3, 1)])
        p50, p99, worst, _ = results[args.streams]
        res.figure(f"{args.streams} concurrent KPI streams, update delay p99", p99 * 1e3, "ms",
                   baseline=results[1][1] * 1e3, baseline_name="one stream p99", goal="every update within 1 s",
                   met=worst < 1.0)
    res.write()


if __name__ == "__main__":
    main()
