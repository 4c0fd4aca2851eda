"""Bench: the live testbed's congestion scenario on each data plane — red-embb's loss per
lane before, during and after it (seed 000 Table 5's order: lane 0 first, the top lane last).

Run (root): .venv/bin/python bench/testbed_congestion.py [--factor 2]

The real pieces: a private PostgreSQL with the demo data (4 users a slice), the live
testbed of the run command (XDP at 1500 packets/s, the bundled P4 target, the NetFPGA
model, each on its own links) and its congestion scenario on all three backends at once
(``LiveTestbed.congest``: each plane's egress capacity drops to its offered load / factor,
in front of its own priority mechanism; docs/testbed.md). Loss per lane from the stored
KPI samples over a window inside the scenario, the same lanes' loss before it as the
baseline of the same run, and after it. The hand-computed expectation per plane is in
``backend/tests/testbed/test_congestion_order.py``.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from datetime import UTC, datetime, timedelta

from _results import Results, quick
from sqlalchemy import func, select
from stack_common import demo_database

from sliceportal.core.db import session_factory
from sliceportal.kpi.hub import KpiHub
from sliceportal.models import KpiSample, Slice
from sliceportal_testbed.live import LiveTestbed

SLICE = "red-embb"
LANES = (0, 2, 4, 6)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--factor", type=float, default=2.0)
    ap.add_argument("--window", type=float, default=5.0 if quick() else 10.0, help="seconds measured in each phase")
    args = ap.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (network namespaces, XDP)")
    res = Results("testbed_congestion")
    with demo_database(users_per_slice=4) as url:
        sessions = session_factory(url)
        with sessions() as session:
            embb = session.scalar(select(Slice.id).where(Slice.name == SLICE))
        tb = LiveTestbed(sessions, KpiHub(), prefix=f"bc{os.getpid() % 1000}-", rate_pps=1500.0)
        tb.start()
        if not tb.running:
            raise SystemExit(f"the testbed did not start: {tb.error}")

        def loss(since: datetime, until: datetime) -> dict[str, dict[int, float]]:
            with sessions() as session:
                rows = session.execute(
                    select(
                        KpiSample.backend_id,
                        KpiSample.lane,
                        func.sum(KpiSample.tx_packets),
                        func.sum(KpiSample.rx_packets),
                    )
                    .where(KpiSample.slice_id == embb, KpiSample.ts > since, KpiSample.ts <= until)
                    .group_by(KpiSample.backend_id, KpiSample.lane)
                ).all()
            names = {p.backend_id: p.name for p in tb.planes}
            out: dict[str, dict[int, float]] = {}
            for bid, lane, tx, rx in rows:
                if tx:
                    out.setdefault(names[bid], {})[lane] = 100 * max(tx - rx, 0) / tx
            return out

        try:
            time.sleep(8)  # deployments settled, senders at rate
            t0 = datetime.now(UTC)
            time.sleep(args.window)
            before = loss(t0, datetime.now(UTC))
            duration = args.window + 6
            for p in tb.planes:
                tb.congest(p.backend_id, duration, args.factor)
            started = datetime.now(UTC)
            capacity = {p.name: p.base_pps * 1024 * 8 / args.factor for p in tb.planes}
            time.sleep(duration)
            during = loss(started + timedelta(seconds=3), started + timedelta(seconds=3 + args.window))
            time.sleep(6)  # the capacity restored, queues drained
            t1 = datetime.now(UTC)
            time.sleep(args.window)
            after = loss(t1, datetime.now(UTC))
        finally:
            tb.stop()
        table = res.table(
            f"{SLICE}'s loss % per lane, congestion factor {args.factor:g} on each backend",
            ["backend", "lane", "before", "during", "after", "capacity during, Mbit/s"],
            note=f"{args.window:g} s windows; the scenario on all three backends at once",
        )
        for name in sorted(during):
            for lane in LANES:
                table.rows.append(
                    [
                        name,
                        lane,
                        round(before.get(name, {}).get(lane, float("nan")), 2),
                        round(during[name].get(lane, float("nan")), 2),
                        round(after.get(name, {}).get(lane, float("nan")), 2),
                        round(capacity[name] / 1e6, 3),
                    ]
                )
            low, top = during[name].get(0, 0.0), during[name].get(6, 100.0)
            res.figure(
                f"{name}: lane 0 loss during congestion",
                low,
                "%",
                baseline=top,
                baseline_name="lane 6 loss during congestion",
                goal="lane 0 >= 30 %, lane 6 <= 2 %, every lane < 2 % after",
                met=low >= 30 and top <= 2 and max(after.get(name, {0: 100.0}).values()) < 2,
            )
        res.print_tables()
        for f in res.figures:
            print(f"{f.name}: {f.value:.2f} {f.unit} (baseline {f.baseline}) met={f.met}")
    res.write()


if __name__ == "__main__":
    sys.exit(main())
