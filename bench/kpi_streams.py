"""Bench: 100 concurrent live dashboard streams — how late does each update arrive?

Run: .venv/bin/python bench/kpi_streams.py [--streams 100] [--seconds 15]

A real stack (private PostgreSQL, the API under uvicorn, httpx clients over loopback).
A producer closes one interval per second: it stores KPI samples for 16 slices x 8 lanes
through the KPI service (insert, SLA check, publish) exactly as the live testbed does. Each
client holds a server-sent-event stream, as a tenant or operator dashboard does, and records
the delay from the interval's close to the update's arrival.

Three publishing paths in the same run, each with one stream and with ``--streams``:
- ``notify, other process``: the producer is this bench process (as the controller's collector
  is): ``ingest()`` NOTIFYs in its transaction, the API process's listener feeds its hub. The
  path of a multi-worker portal (issue #16);
- ``notify, same process``: the producer runs inside the API process, through the same NOTIFY;
- ``in-process hub`` (baseline, the single-process portal before #16): the producer inside the
  API process stores, commits and hands the points to that process's hub directly.
The ratios NOTIFY / in-process say what the fan-out through PostgreSQL costs.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import tempfile
import textwrap
import threading
import time
from datetime import UTC, datetime
from pathlib import Path

import httpx
from _results import Results, quick
from stack_common import stack

from sliceportal.core.db import session_factory
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest

SLICES, LANES = 16, 8
ROUNDS = 3
PATHS = {"notify, other process": "remote", "notify, same process": "notify", "in-process hub": "hub"}


def interval_points() -> list[KpiPoint]:
    ts = datetime.now(UTC)
    return [
        KpiPoint(
            slice_id=s,
            backend_id=1,
            lane=lane,
            source="counters",
            ts=ts,
            rx_packets=1000,
            throughput_bps=8e6,
            loss_pct=0.0,
            delay_p99_ms=1.0,
        )
        for s in range(1, SLICES + 1)
        for lane in range(LANES)
    ]


# Started inside the server process: one interval per second, by the path the mode file names.
PRODUCER = textwrap.dedent("""
    import os, threading, time
    from datetime import UTC, datetime
    from pathlib import Path
    from sliceportal.asgi import app
    from sliceportal.kpi.points import KpiPoint
    from sliceportal.kpi.store import ingest, store

    def produce():
        mode_file = Path(os.environ["KPI_BENCH_MODE"])
        while True:
            time.sleep(1 - time.time() % 1)
            mode = mode_file.read_text().strip()
            if mode not in ("notify", "hub"):
                continue
            ts = datetime.now(UTC)
            points = [KpiPoint(slice_id=s, backend_id=1, lane=l, source="counters", ts=ts, rx_packets=1000,
                               throughput_bps=8e6, loss_pct=0.0, delay_p99_ms=1.0)
                      for s in range(1, {slices} + 1) for l in range({lanes})]
            with app.state.sessionmaker() as session:
                if mode == "notify":
                    ingest(session, points)
                else:  # the single-process portal's path: this process's hub only
                    _, tenant_of = store(session, points)
                    session.commit()
                    app.state.kpi_hub.publish(points, tenant_of)

    threading.Thread(target=produce, daemon=True).start()
""").format(slices=SLICES, lanes=LANES)


def remote_producer(url: str, mode_file: Path, stop: threading.Event) -> None:
    """The producer of another process (here: the bench's), as the controller's collector is."""
    sessions = session_factory(url)
    while not stop.wait(1 - time.time() % 1):
        if mode_file.read_text().strip() == "remote":
            with sessions() as session:
                ingest(session, interval_points())


async def listen(base: str, headers: dict[str, str], seconds: float, delays: list[float]) -> int:
    updates = 0
    async with (
        httpx.AsyncClient(base_url=base, timeout=None) as client,
        client.stream("GET", "/api/v1/kpis/stream", headers=headers) as r,
    ):
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
    prepare = (
        "INSERT INTO tenant (name, vni, contact, description, version) VALUES ('t', 1, '', '', 1)",
        "INSERT INTO backend (name, driver, options, paths, lanes, capacity, health, health_detail, version) "
        "VALUES ('b', 'xdp', '{}', 8, 4, '{}', 'ok', '', 1)",
        *(
            f"INSERT INTO slice (tenant_id, slice_type_id, name, description, path_mode, state, version) "
            f"VALUES (1, 1, 's{s}', '', 'per_slice', 'deployed', 1)"
            for s in range(1, SLICES + 1)
        ),
    )
    mode_file = Path(tempfile.mkstemp(prefix="kpi-bench-mode-")[1])
    mode_file.write_text("off")
    os.environ["KPI_BENCH_MODE"] = str(mode_file)  # the server process inherits it
    code = PRODUCER + "\nimport os, uvicorn\nuvicorn.run(app, port=int(os.environ['PORT']), log_level='warning')\n"
    results: dict[tuple[str, int], tuple[float, float, float, int]] = {}
    delays: dict[tuple[str, int], list[float]] = {(path, n): [] for path in PATHS for n in (1, args.streams)}
    updates: dict[tuple[str, int], int] = dict.fromkeys(delays, 0)
    stop = threading.Event()
    try:
        with stack(server_code=code, prepare_sql=prepare) as st:
            threading.Thread(target=remote_producer, args=(st.pg.url(), mode_file, stop), daemon=True).start()
            # the paths take turns, ROUNDS times, so a change in the machine's load hits them alike
            for _ in range(ROUNDS):
                for path, mode in PATHS.items():
                    mode_file.write_text(mode)
                    time.sleep(1.5)  # the previous path's last interval delivered, this one's producer running
                    for n in (1, args.streams):
                        got, count = asyncio.run(run_streams(st.base, st.headers, n, args.seconds / ROUNDS))
                        delays[path, n] += got
                        updates[path, n] += count
            for k, d in delays.items():
                d.sort()
                results[k] = (statistics.median(d), d[int(0.99 * (len(d) - 1))], max(d), updates[k])
            mode_file.write_text("off")
    finally:
        stop.set()
        mode_file.unlink(missing_ok=True)
    print(
        f"{SLICES} slices x {LANES} lanes stored and published once a second, {args.seconds:.0f} s per row "
        f"in {ROUNDS} turns:"
    )
    table = res.table(
        f"KPI stream delay after the interval closed ({SLICES} slices x {LANES} lanes, 1 Hz), by publishing path",
        ["path", "streams", "updates", "p50 ms", "p99 ms", "max ms"],
    )
    for (path, n), (p50, p99, worst, updates) in results.items():
        print(
            f"  {path:22s} {n:4d} stream(s): {updates} updates, delay p50 {p50 * 1000:6.1f} ms, "
            f"p99 {p99 * 1000:6.1f} ms, max {worst * 1000:6.1f} ms"
        )
        table.rows.append([path, n, updates, round(p50 * 1e3, 1), round(p99 * 1e3, 1), round(worst * 1e3, 1)])
    multi = "notify, other process"
    for n in (1, args.streams):
        for i, stat in ((0, "p50"), (1, "p99")):
            value, base = results[multi, n][i], results["in-process hub", n][i]
            res.figure(
                f"{n} KPI stream(s), ingest in another process -> stream through NOTIFY, {stat}",
                value * 1e3,
                "ms",
                baseline=base * 1e3,
                baseline_name=f"in-process hub (single-process portal), {n} stream(s) {stat}",
            )
            print(f"  {n:4d} stream(s) {stat}: NOTIFY from another process x{value / base:.2f} of the in-process hub")
    p50, p99, worst, _ = results[multi, args.streams]
    print(f"  every update within 1 s through NOTIFY with {args.streams} streams: {worst < 1.0}")
    res.figure(
        f"{args.streams} concurrent KPI streams, update delay p99 (NOTIFY from another process)",
        p99 * 1e3,
        "ms",
        baseline=results[multi, 1][1] * 1e3,
        baseline_name="one stream p99",
        goal="every update within 1 s",
        met=worst < 1.0,
    )
    res.write()


if __name__ == "__main__":
    main()
