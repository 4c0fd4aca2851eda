"""Bench: KPI latency on the live testbed — packet leaves a data plane → point on the KPI stream.

Run (root): .venv/bin/python bench/kpi_latency.py [--seconds 20]

The real pieces: a private PostgreSQL with the demo data, the live testbed of the run
command (XDP, the bundled P4 target and the NetFPGA model, each on its own links, their
egress meters) and the KPI service's hub with one subscriber, as a dashboard stream has.
For every point that reaches the subscriber: arrival time - the end of its interval. The
interval ends after the last packet it counts left the data plane (kernel receive stamp at
the egress), so this is the latency of an interval's last packet; the first packet of an
interval waits up to one interval (1 s) more. Per backend p50 / p99.

Baseline in the same run: storing and publishing the same number of points through the
same KPI service (``kpi.store.ingest`` → NOTIFY → the process's listener → hub) without a
data plane in front — the part of the latency that is the database and the fan-out, not the
measurement.

A second table (full run only) sweeps the offered load of the two process data planes
(the bundled P4 target and the NetFPGA model) to show where each falls behind on this
machine; docs/testbed.md gives the rates the testbed uses.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import sys
import threading
import time
from collections import defaultdict
from datetime import UTC, datetime

from _results import Results, quick
from sqlalchemy import select
from stack_common import demo_database

from sliceportal.core.db import session_factory
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.notify import start_listener
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, KpiSample, Slice
from sliceportal_testbed import live
from sliceportal_testbed.live import LiveTestbed


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, min(len(ordered) - 1, round(p / 100 * len(ordered) + 0.5) - 1))]


class Listener:
    """One subscriber of the hub on an event loop of its own, recording arrival - interval end."""

    def __init__(self, hub: KpiHub) -> None:
        self.delays: dict[int, list[float]] = defaultdict(list)
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(hub,), daemon=True)
        self._thread.start()
        self._ready.wait(5)

    def _run(self, hub: KpiHub) -> None:
        asyncio.set_event_loop(self._loop)

        async def main() -> None:
            sub = hub.subscribe(None, None)
            self._ready.set()
            while True:
                points = await sub.queue.get()
                now = time.time()
                for p in points:
                    self.delays[p.backend_id].append(now - p.ts.timestamp())

        self._loop.run_until_complete(main())

    def reset(self) -> None:
        self.delays.clear()


def run_testbed(
    url: str, seconds: float, process_pps: dict[str, float], listener: Listener | None, hub: KpiHub, prefix: str
) -> dict[str, dict[str, float]]:
    """The testbed for ``seconds``; per backend name: points, loss and delay of what it measured."""
    live.PROCESS_PLANE_PPS = process_pps  # the bench's knob: the process planes' offered load
    sessions = session_factory(url)
    tb = LiveTestbed(sessions, hub, prefix=prefix, rate_pps=max(2000.0, *process_pps.values()))
    tb.start()
    if not tb.running:
        raise SystemExit(f"the testbed did not start: {tb.error}")
    try:
        time.sleep(3)  # deployments settled, first intervals written
        if listener is not None:
            listener.reset()
        started = datetime.now(UTC)
        time.sleep(seconds)
        names = {p.backend_id: p.name for p in tb.planes}
        with sessions() as session:
            rows = session.scalars(select(KpiSample).where(KpiSample.ts >= started)).all()
            out: dict[str, dict[str, float]] = {}
            for bid, name in names.items():
                mine = [r for r in rows if r.backend_id == bid and r.rx_packets]
                tx, rx = sum(r.tx_packets for r in mine), sum(r.rx_packets for r in mine)
                p99s = [r.delay_p99_ms for r in mine if r.delay_p99_ms is not None]
                out[name] = {
                    "backend_id": bid,
                    "points": len(mine),
                    "rx_pps": rx / seconds,
                    "loss_pct": 100 * max(tx - rx, 0) / tx if tx else 0.0,
                    "delay_p99_ms": max(p99s) if p99s else 0.0,
                }
        return out
    finally:
        tb.stop()


def baseline(url: str, hub: KpiHub, listener: Listener, batches: int, per_batch: int) -> list[float]:
    """ingest -> NOTIFY -> listener -> hub for batches of points as big as the testbed's, no data plane
    in front."""
    sessions = session_factory(url)
    listener.reset()
    with sessions() as session:
        bid = session.scalar(select(Backend.id).order_by(Backend.id).limit(1))
        sid = session.scalar(select(Slice.id).order_by(Slice.id).limit(1))
    assert bid is not None and sid is not None
    for _ in range(batches):
        ts = datetime.now(UTC)
        points = [
            KpiPoint(slice_id=sid, backend_id=bid, lane=100 + i, source="counters", ts=ts, rx_packets=1)
            for i in range(per_batch)
        ]
        with sessions() as session:
            ingest(session, points)
        time.sleep(0.2)
    time.sleep(0.5)
    return listener.delays.get(bid, [])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seconds", type=float, default=8.0 if quick() else 20.0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (network namespaces, XDP)")
    res = Results("kpi_latency")
    with demo_database(users_per_slice=4) as url:
        hub = KpiHub()
        kpi_listener = start_listener(url, hub)  # as an API process hears the points (NOTIFY)
        listener = Listener(hub)
        prefix = f"bk{os.getpid() % 1000}-"
        measured = run_testbed(url, args.seconds, live.PROCESS_PLANE_PPS, listener, hub, prefix)
        delays = {name: listener.delays.get(int(m["backend_id"]), []) for name, m in measured.items()}
        per_batch = max(1, round(statistics.mean(m["points"] for m in measured.values()) / args.seconds))
        base = baseline(url, hub, listener, 20, per_batch)
        base_p50 = percentile(base, 50) * 1e3 if base else None
        table = res.table(
            "KPI latency: packet leaves the data plane -> point on the KPI stream (last packet of "
            "an interval; the first waits up to 1 s more)",
            ["backend", "points", "p50 ms", "p99 ms", "rx packets/s", "loss %", "delay p99 ms"],
        )
        for name, d in delays.items():
            m = measured[name]
            if not d:
                table.rows.append([name, 0, None, None, round(m["rx_pps"]), None, None])
                continue
            p50, p99 = percentile(d, 50) * 1e3, percentile(d, 99) * 1e3
            table.rows.append(
                [
                    name,
                    len(d),
                    round(p50, 1),
                    round(p99, 1),
                    round(m["rx_pps"]),
                    round(m["loss_pct"], 2),
                    round(m["delay_p99_ms"], 1),
                ]
            )
            res.figure(
                f"{name}: packet -> KPI stream p50",
                p50,
                "ms",
                baseline=base_p50,
                baseline_name="ingest -> stream, no data plane",
            )
            res.figure(
                f"{name}: packet -> KPI stream p99",
                percentile(d, 99) * 1e3,
                "ms",
                baseline=base_p50,
                baseline_name="ingest -> stream, no data plane",
                goal="<= 1000 ms (a 1 Hz chart)",
                met=p99 <= 1000,
            )
        if base:
            res.figure("baseline: ingest -> stream p50", percentile(base, 50) * 1e3, "ms")
        if not quick():
            sweep = res.table(
                "Process data planes under offered load (per plane, 1024-byte frames)",
                ["offered packets/s", "backend", "rx packets/s", "loss %", "delay p99 ms"],
            )
            for pps in (150.0, 300.0, 600.0, 1200.0):
                got = run_testbed(url, 8.0, {"p4rt": pps, "netfpga": pps}, None, hub, prefix)
                for name in ("bmv2", "netfpga-sim"):
                    m = got[name]
                    sweep.rows.append(
                        [pps, name, round(m["rx_pps"]), round(m["loss_pct"], 2), round(m["delay_p99_ms"], 1)]
                    )
        kpi_listener.stop()
        res.print_tables()
    res.write()


if __name__ == "__main__":
    sys.exit(main())
