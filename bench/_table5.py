"""Seed 000 Table 5: the paper's figures and the plot both Table 5 benches draw beside them
(``traffic_table5_netfpga``, ``traffic_table5_p4``)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _results import Results

from sliceportal.traffic.meter import GroupStats

# seed 000 Table 5: lane -> (delay ms, loss %, jitter ms)
PAPER = {0: (2.3624, 88.97, 0.94003), 1: (0.25178, 0.19632, 0.02468), 2: (0.20891, 0.19601, 0.01938),
         3: (0.13805, 0.19552, 0.01487)}  # fmt: skip


COLUMNS = [
    "slices",
    "rules",
    "lane",
    "sent",
    "received",
    "loss %",
    "delay µs",
    "jitter µs",
    "paper delay ms",
    "paper loss %",
    "paper jitter ms",
]
GOAL = "lane 0 >= 50 %, lanes 1-3 <= 1 %, delay strictly ordered"


def row(slices: int, rules: int, lane: int, g: GroupStats) -> list[Any]:
    """A row of the Table 5 table (COLUMNS): this run's lane beside the paper's."""
    p = PAPER[lane]
    d = g.delay.mean_us if g.delay else float("nan")
    return [slices, rules, lane, g.expected, g.received, round(g.loss_pct, 2), round(d, 1), round(g.jitter_us, 2), *p]


def lane0_figure(res: Results, slices: int, lanes: dict[int, GroupStats], met: bool, note: str = "") -> None:
    """The figure each scenario is judged by: lane 0's loss against the worst of lanes 1-3."""
    res.figure(
        f"{slices} slices: lane 0 loss / worst of lanes 1-3",
        lanes[0].loss_pct if 0 in lanes else 0,
        "%",
        baseline=max(lanes[lane].loss_pct for lane in (1, 2, 3) if lane in lanes),
        baseline_name="worst loss of lanes 1-3",
        goal=GOAL,
        met=met,
        note=note,
    )


def plot(results: dict[int, dict[int, GroupStats]], out: Path, *, title: str, label: str, jitter: bool) -> None:
    """Per scenario (slices): mean delay, loss (and RFC 3550 jitter), then the largest
    scenario's loss per lane beside the paper's. ``label`` names a lane ("queue", "lane")."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    panels = ["mean one-way delay (µs)", "packet loss (%)"] + (["RFC 3550 jitter (µs)"] if jitter else [])
    fig, axes = plt.subplots(1, len(panels) + 1, figsize=(5 * (len(panels) + 1), 4.5))
    scenarios = sorted(results)
    width = 0.2
    for lane in range(4):
        xs = [i + (lane - 1.5) * width for i in range(len(scenarios))]
        groups = [results[s][lane] for s in scenarios]
        series = [[d.mean_us if (d := g.delay) is not None else 0 for g in groups], [g.loss_pct for g in groups]]
        if jitter:
            series.append([g.jitter_us for g in groups])
        for ax, values in zip(axes, series, strict=False):
            ax.bar(xs, values, width, label=f"{label} {lane}")
    for ax, panel in zip(axes, panels, strict=False):
        ax.set_xticks(range(len(scenarios)), [str(s) for s in scenarios])
        ax.set_xlabel("Flexible Slice instances (32 users each)")
        ax.set_title(panel)
        ax.legend()
    axes[0].set_yscale("log")  # lanes differ by orders of magnitude, as in the paper's Fig. 7
    # The pattern beside the paper's own Table 5: loss per lane at the largest scenario.
    largest, lanes, last = scenarios[-1], range(4), axes[-1]
    last.bar(
        [x - 0.2 for x in lanes],
        [results[largest][lane].loss_pct for lane in lanes],
        0.4,
        label=f"this run, {largest} slices",
    )
    last.bar([x + 0.2 for x in lanes], [PAPER[lane][1] for lane in lanes], 0.4, label="seed 000 Table 5")
    last.set_xticks(list(lanes), [f"{label} {lane}" for lane in lanes])
    last.set_title("packet loss (%) beside the paper")
    last.legend()
    fig.suptitle(title)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"\nplot: {out}")
