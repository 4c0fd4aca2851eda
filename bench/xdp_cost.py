"""XDP program cost in ns/packet (BPF_PROG_TEST_RUN with repeat), next to an XDP_PASS-only
program measured in the same run: the ratio is the figure (TOOLCHAIN.md: machines differ).

Paths measured on seed 001's load (16 services by TEID, 8 prioritised):
full GTP-in-VXLAN (prioritised -> cpumap redirect; not prioritised -> alt rewrite +
XDP_TX), GTP-only, plain. Then the cost per stage: the program built with -DSP_STAGE=n
(make -C dataplane/xdp stages) returns once stage n is done (1 parse, 2 flow cache,
3 policing, 4 steering; the full program also counts), each run on the prioritised
GTP-in-VXLAN packet in the same rounds; a table and the plot "XDP cost per stage".
All programs are measured round-robin (median over rounds), so a load change on the
machine hits every figure alike. Needs root.
Usage: .venv/bin/python bench/xdp_cost.py [repeat]
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path

from _results import Results, plots_dir, quick

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.libbpf import VERDICTS, BpfObject, test_run

ROOT = Path(__file__).resolve().parents[1]
BUILD = ROOT / "dataplane/xdp/build"
PACKET_BYTES = 160  # TOOLCHAIN.md reference size
OPTIONS = {"alt_mac": "02:00:00:00:00:09", "alt_ip": "10.9.9.9", "alt_lanes": [2], "overload_poll_s": 0}
STAGES = (
    "parse",
    "+ flow cache hit",
    "+ policing (rate limit, egress budget)",
    "+ steering (Algorithm 1)",
    "+ counters (full program)",
)


def seed001_ir() -> RuleIR:
    rules = tuple(Rule(Match(teid=Ternary.exact(100 + s, 32)), Action(1, 3 if s < 8 else 2, s % 8)) for s in range(16))
    return RuleIR(lanes=4, paths=8, rules=rules)


def sized(flow: Flow) -> bytes:
    bare = len(build_bytes(flow))
    return build_bytes(flow, bytes(max(0, PACKET_BYTES - bare)))


def loaded(obj: Path | None, **extra: object) -> Driver:
    """A driver on ``obj`` (default: the full program) holding the seed 001 rules."""
    if obj is not None:
        os.environ["SLICEPORTAL_XDP_OBJECT"] = str(obj)
    try:
        d = Driver({**OPTIONS, **extra})
        d.apply(d.lower(seed001_ir()), lambda e: None)
    finally:
        os.environ.pop("SLICEPORTAL_XDP_OBJECT", None)
    return d


def measure(runs: dict[str, tuple[int, bytes]], repeat: int, rounds: int) -> dict[str, float]:
    """Median ns/packet of each (program fd, packet), measured round-robin."""
    seen: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for k, (fd, pkt) in runs.items():
            seen[k].append(test_run(fd, pkt, repeat).duration_ns)
    return {k: statistics.median(v) for k, v in seen.items()}


def plot(rows: list[tuple[str, float, float]], pass_ns: float, out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(8, 3.8))
    left = 0.0
    labels = ["XDP_PASS (empty program)"] + [r[0] for r in rows]
    widths = [pass_ns] + [max(0.0, r[2]) for r in rows]
    for i, (label, w) in enumerate(zip(labels, widths, strict=True)):
        ax.barh(0, w, left=left, label=f"{label}: {w:.1f} ns", color=f"C{i}")
        left += w
    for goal, name in ((1.5, "goal cache hit 1.5x"), (2.0, "goal mix 2.0x")):
        ax.axvline(goal * pass_ns, color="k", ls="--" if goal == 1.5 else ":", lw=1)
        ax.text(goal * pass_ns, 0.45, name, rotation=90, va="top", ha="right", fontsize=8)
    ax.set_yticks([])
    ax.set_xlabel("ns per packet (BPF_PROG_TEST_RUN, prioritised GTP-in-VXLAN, 160 B)")
    ax.set_title("XDP cost per stage")
    ax.legend(loc="upper center", bbox_to_anchor=(0.5, -0.25), ncol=2, fontsize=8)
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    plt.close(fig)
    print(f"plot: {out}")


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000 if quick() else 1_000_000
    rounds = 5 if quick() else 9
    subprocess.run(["make", "-s", "-C", str(ROOT / "dataplane/xdp"), "all", "stages"], check=True)
    res = Results("xdp_cost")
    d = loaded(None)
    cold = loaded(None, flow_cache=False)
    stage_drivers = [loaded(BUILD / f"stages/sliceportal_stage{n}.bpf.o") for n in range(1, 5)]
    base = BpfObject(str(BUILD / "pass.bpf.o"))
    pass_fd = base.program_fd("xdp_pass")
    cases = {
        "vxlan+gtp prioritised": sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=100, vni=7)),
        "vxlan+gtp to alt": sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=110, vni=7)),
        "gtp prioritised": sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=100, encap=Encap.GTP)),
        "plain miss": sized(Flow("10.45.0.1", "10.60.0.1", 5000, encap=Encap.PLAIN)),
    }
    hot = cases["vxlan+gtp prioritised"]
    runs = {"pass": (pass_fd, hot)}
    runs |= {name: (d.dataplane.prog_fd, pkt) for name, pkt in cases.items()}
    runs["no cache"] = (cold.dataplane.prog_fd, hot)
    runs |= {f"stage{n}": (sd.dataplane.prog_fd, hot) for n, sd in enumerate(stage_drivers, 1)}
    for fd, pkt in runs.values():
        test_run(fd, pkt, 1000)  # warm every flow cache and bucket first
    ns = measure(runs, repeat, rounds)
    pass_ns = ns["pass"]

    table = res.table("XDP cost per path", ["path", "verdict", "ns/packet", "x XDP_PASS", "Mpps/core"])
    print(f"XDP_PASS-only baseline: {pass_ns:.1f} ns/packet ({1e3 / pass_ns:.1f} Mpps per core)")
    table.rows.append(["XDP_PASS only (baseline)", "pass", round(pass_ns, 1), 1.0, round(1e3 / pass_ns, 1)])
    print(f"{'path':28} {'verdict':9} {'ns/pkt':>7} {'x pass':>7} {'Mpps/core':>10}")
    for name in [*cases, "no cache"]:
        fd, pkt = runs[name]
        verdict = VERDICTS[test_run(fd, pkt).retval]
        label = "vxlan+gtp prio, no cache" if name == "no cache" else name
        print(f"{label:28} {verdict:9} {ns[name]:7.1f} {ns[name] / pass_ns:7.2f} {1e3 / ns[name]:10.1f}")
        table.rows.append([label, verdict, round(ns[name], 1), round(ns[name] / pass_ns, 2), round(1e3 / ns[name], 1)])
    table.note = f"{len(hot)}-byte packets, BPF_PROG_TEST_RUN repeat {repeat}, median of {rounds} interleaved rounds"
    hit = ns["vxlan+gtp prioritised"]
    res.figure(
        "flow-cache hit (GTP-in-VXLAN, prioritised), ns/packet",
        hit,
        "ns",
        baseline=pass_ns,
        baseline_name="empty XDP_PASS program",
        goal="<= 1.5 x baseline",
        met=hit / pass_ns <= 1.5,
    )
    avg = statistics.mean(ns[n] for n in cases)
    res.figure(
        "seed 001 mix (parse + classify + steer), ns/packet",
        avg,
        "ns",
        baseline=pass_ns,
        baseline_name="empty XDP_PASS program",
        goal="<= 2.0 x baseline",
        met=avg / pass_ns <= 2.0,
    )
    res.figure(
        "classifier with the flow cache off, ns/packet",
        ns["no cache"],
        "ns",
        baseline=pass_ns,
        baseline_name="empty XDP_PASS program",
    )

    # cost per stage: each cut program against the one before it
    stages = res.table("XDP cost per stage", ["stage", "ns/packet (cumulative)", "stage ns", "x XDP_PASS"])
    cumulative = [ns[f"stage{n}"] for n in range(1, 5)] + [hit]
    rows, prev = [], pass_ns
    print(f"\n{'stage':40} {'cum ns':>7} {'stage ns':>8} {'x pass':>7}")
    for name, cum in zip(STAGES, cumulative, strict=True):
        rows.append((name, cum, cum - prev))
        print(f"{name:40} {cum:7.1f} {cum - prev:8.1f} {cum / pass_ns:7.2f}")
        stages.rows.append([name, round(cum, 1), round(cum - prev, 1), round(cum / pass_ns, 2)])
        prev = cum
    stages.note = (
        "the program built with -DSP_STAGE=n returns XDP_PASS after stage n (what the stage hands "
        "to the next, e.g. the key words, still computed); stage ns = the difference to the previous cut "
        "(the first: to the empty program); prioritised GTP-in-VXLAN, flow cache warm"
    )
    out = plots_dir() / "xdp_cost_stages.png"
    plot(rows, pass_ns, out)
    res.plot(out)
    print(f"({len(hot)}-byte packets, repeat {repeat}, median of {rounds} interleaved rounds)")
    res.write()
    for sd in stage_drivers:
        sd.close()
    cold.close()
    base.close()
    d.close()


if __name__ == "__main__":
    main()
