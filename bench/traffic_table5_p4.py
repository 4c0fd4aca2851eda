"""Seed 000 Table 5 on the bundled P4 target, end to end through our own pipeline.

    .venv/bin/python bench/traffic_table5_p4.py [--out bench/results/plots/traffic_table5_p4.png]

For 1, 4, 8, 16 slices (seed 000 Table 3 with every flow, 4 packets per flow; ``--quick``: 1
and 4): the compiler builds the Table 2 configuration, the P4Runtime driver writes it into
the bundled target (started with 4 strict-priority queues and an egress link at 0.78 of the
offered rate), the target replays the Table 3 traffic on the packets' own clock, and the
meter measures each lane from the output pcap (``sliceportal_p4rt.experiment``, the same
experiment the test runs).

The baseline of this run is the paper's own Table 5 beside ours: the comparison is the
pattern (issue #17: lane 0 >= 50 % loss, lanes 1-3 <= 1 %, delay strictly ordered), not the
absolute values (the paper's bottleneck was a host behind a 10G card; ours is the target's
egress link on simulated time).
"""

from __future__ import annotations

import argparse
import tempfile
from pathlib import Path

from _results import Results, plots_dir, quick
from _table5 import COLUMNS, PAPER, lane0_figure, plot, row

from sliceportal.traffic.meter import GroupStats
from sliceportal_p4rt.experiment import LINK_BPS, OFFERED_PPS, TARGET_ARGS, pattern_holds, table5
from sliceportal_testbed.processes import start_p4runtime_target


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=plots_dir() / "traffic_table5_p4.png")
    args = parser.parse_args()
    scales = (1, 4) if quick() else (1, 4, 8, 16)
    res = Results("traffic_table5_p4")
    note = (
        f"{OFFERED_PPS} packets/s of 1500 B offered, egress link {LINK_BPS / 1e9:.3f} Gbit/s, 4 strict-priority "
        "queues, 4 packets per flow"
    )
    table = res.table("seed 000 Table 5 on the bundled P4 target, beside the paper", COLUMNS, note=note)
    print(note)
    results: dict[int, dict[int, GroupStats]] = {}
    for slices in scales:
        target = start_p4runtime_target(*TARGET_ARGS)
        try:
            with tempfile.TemporaryDirectory() as tmp_dir:
                r = table5(target.address, slices, Path(tmp_dir))
        finally:
            target.stop()
        results[slices] = r.lanes
        for lane in sorted(r.lanes):
            g, p = r.lanes[lane], PAPER[lane]
            d = g.delay.mean_us if g.delay else float("nan")
            print(
                f"{slices:>3} slices {r.rules:>4} rules lane {lane}: {g.expected:>6} sent {g.received:>6} received "
                f"{g.loss_pct:>7.2f} % lost, delay {d:>9.1f} µs, jitter {g.jitter_us:>7.2f} µs   "
                f"paper: {p[0]} ms {p[1]} % {p[2]} ms"
            )
            table.rows.append(row(slices, r.rules, lane, g))
        ok, why = pattern_holds(r.lanes)
        print(f"    pattern holds: {ok} ({why})")
        lane0_figure(res, slices, r.lanes, met=ok, note=why)
    plot(
        results,
        args.out,
        title="Seed 000 Table 5 on the bundled P4 target (strict priority, egress at 0.78 of the offered rate)",
        label="lane",
        jitter=False,
    )
    res.plot(args.out)
    res.write()


if __name__ == "__main__":
    main()
