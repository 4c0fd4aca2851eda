"""Seed 001 Fig. 4 / Table 1 on the XDP data plane in the emulated testbed (root).

    .venv/bin/python bench/traffic_seed001_xdp.py [--out bench/out/traffic_seed001_xdp.png]

Edge sends seed 001's load (16 services told apart by TEID, 8 prioritised, all at the same
rate) to core, where the XDP program steers the prioritised lane to a CPU and XDP_PASSes it,
and rewrites everything else towards alt with XDP_TX (seed 001 Algorithm 1). One meter
captures on core (accepted) and one on alt (forwarded), each in its own process. Per
offered rate: the accepted and forwarded shares and what was lost — seed 001's claim is
prioritised traffic accepted (the "desired throughput" is 50 % of the offered load), the
rest forwarded, nothing silently lost. The baseline of this run is the sender's own
report (packets offered); the shares are ratios against it.

The prioritised lane's queue has a capacity (driver option ``lane_capacity_pps``,
``--capacity``; its CPU's cpumap queue of ``cpumap_qsize`` packets drained at that rate):
what exceeds it is steered to alt and counted (the data plane's overflow counter), so
the prioritised half is delivered (on core, or on alt beyond the capacity) rather than
dropped at a full queue. Every packet is accounted for: accepted (core meter) + to alt
(alt meter) + dropped = sent, the dropped ones split into what the data plane counted
(cpumap queue full), what the meters' capture dropped, and the unexplained rest.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

from _results import Results, plots_dir

from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Underlay
from sliceportal.traffic.scenarios import table1
from sliceportal.traffic.sender import open_sender, send
from sliceportal_testbed import Testbed
from sliceportal_xdp import layout as L
from sliceportal_xdp.driver import Driver

PRIO_LANE, BULK_LANE = 3, 2
SIZE = 512
OVERLOAD_POLL_S = float(os.environ.get("OVERLOAD_POLL_S", "0"))  # 0: no CPU overload detection
RATES: list[float | None] = [10_000, 50_000, 100_000, 200_000, None]  # None: the sender's ceiling
CAPACITY_PPS = 10_000  # the prioritised lane's default capacity (what CPU 1 takes here, shared with the meters)


def ir() -> RuleIR:
    rules = tuple(
        Rule(Match(teid=Ternary.exact(sf.flow.teid, 32)), Action(1, PRIO_LANE if sf.prioritised else BULK_LANE, 0))
        for sf in table1(SIZE)
    )
    return RuleIR(lanes=4, paths=8, rules=rules, miss=MissPolicy(MissMode.FIXED, lane=0, rr_path=0))


def meter(netns: str, out: Path) -> subprocess.Popen[str]:
    cmd = [sys.executable, "-c", "from sliceportal.traffic.cli import app; app()", "measure",
           "--iface", "eth0", "--netns", netns, "--duration", "120", "--idle", "1.5",
           "--scenario", "table1", "--size", str(SIZE), "--lanes", "8", "--out", str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
    assert proc.stderr is not None
    for line in proc.stderr:  # wait until its socket is open
        if line.startswith("capturing on"):
            break
    return proc


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--out", type=Path, default=plots_dir() / "traffic_seed001_xdp.png")
    parser.add_argument(
        "--capacity",
        type=int,
        default=CAPACITY_PPS,
        help="prioritised lane capacity, packets/s (0: uncapped, the old behaviour)",
    )
    args = parser.parse_args()
    if os.geteuid() != 0:
        raise SystemExit("needs root (namespaces, XDP)")
    rows = []
    with Testbed(f"spb{os.getpid() % 100000}-") as tb, tempfile.TemporaryDirectory() as tmp:
        edge, core, alt = tb["edge"], tb["core"], tb["alt"]
        driver = Driver(
            {
                "interface": core.ifname,
                "netns": core.netns,
                "tx_peer": f"{edge.netns}/{tb.peer_port('core')}",
                "alt_mac": alt.mac,
                "alt_ip": alt.ip,
                "alt_lanes": [BULK_LANE],
                "lane_cpus": {PRIO_LANE: 1 % (os.cpu_count() or 1)},
                "lane_capacity_pps": {PRIO_LANE: args.capacity} if args.capacity else {},
                "overload_poll_s": OVERLOAD_POLL_S,
            }
        )
        cpu = 1 % (os.cpu_count() or 1)
        try:
            driver.apply(driver.lower(ir()), lambda _: None)
            underlay = Underlay(src_mac=edge.mac, dst_mac=core.mac, outer_src=edge.ip, outer_dst=core.ip)
            sock = open_sender(edge.ifname, edge.netns)
            flows = table1(SIZE)
            prio_ids = {sf.flow_id for sf in flows if sf.prioritised}
            print(f"seed 001 Table 1 load, {SIZE} B frames, 16 services (8 prioritised), 2 s per rate")
            print(f"prioritised lane capacity: {args.capacity or 'none'} packets/s")
            print(f"{'asked pps':>10} {'offered pps':>11} {'accepted %':>10} {'prio acc. %':>11} {'forwarded %':>11} "
                  f"{'lost %':>7} {'meter drops':>11} {'core p50 µs':>11} {'alt p50 µs':>10} {'prio deliv. %':>13} "
                  f"{'overflow':>8} {'cpumap drops':>12}")  # fmt: skip
            for i, rate in enumerate(RATES):
                outs = {role: Path(tmp) / f"{role}{i}.json" for role in ("core", "alt")}
                procs = {role: meter(tb[role].netns, outs[role]) for role in outs}
                c0 = driver.raw_counters()
                r = send(sock, flows, rate_pps=rate, duration_s=2.0, underlay=underlay)
                for p in procs.values():
                    p.wait(timeout=180)
                c1 = driver.raw_counters()
                overflow = c1.globals[L.G_OVERFLOW] - c0.globals[L.G_OVERFLOW]
                qdrops = c1.cpumap_drops.get(cpu, 0) - c0.cpumap_drops.get(cpu, 0)
                rep = {role: json.loads(outs[role].read_text()) for role in outs}
                got = {role: {f["flow_id"]: f["received"] for f in rep[role]["flows"]} for role in rep}
                acc, fwd = sum(got["core"].values()), sum(got["alt"].values())
                prio_acc = sum(n for f, n in got["core"].items() if f in prio_ids)
                prio_alt = sum(n for f, n in got["alt"].items() if f in prio_ids)
                prio_sent = sum(n for f, n in r.sent.items() if f in prio_ids)
                drops = rep["core"]["capture_drops"] + rep["alt"]["capture_drops"]
                offered = (r.packets - 1) / r.duration_s
                p50 = {role: (rep[role]["total"]["delay"] or {}).get("p50_us", float("nan")) for role in rep}
                dropped = r.packets - acc - fwd
                row = (rate, offered, 100 * acc / r.packets, 100 * prio_acc / prio_sent, 100 * fwd / r.packets,
                       100 * dropped / r.packets, drops, p50["core"], p50["alt"],
                       100 * (prio_acc + prio_alt) / prio_sent, overflow, qdrops, r.packets, acc, fwd, dropped,
                       dropped - drops - qdrops)  # fmt: skip
                rows.append(row)
                print(f"{rate or 'max':>10} {offered:>11.0f} {row[2]:>10.2f} {row[3]:>11.2f} {row[4]:>11.2f} "
                      f"{row[5]:>7.2f} {drops:>11} {row[7]:>11.1f} {row[8]:>10.1f} {row[9]:>13.2f} {overflow:>8} "
                      f"{qdrops:>12}")  # fmt: skip
            sock.close()
        finally:
            driver.close()
    plot(rows, args.out)
    res = Results("traffic_seed001_xdp")
    table = res.table(
        f"seed 001 Table 1 load on XDP, {SIZE} B frames, 16 services (8 prioritised)",
        [
            "asked pps",
            "offered pps",
            "accepted %",
            "prio accepted %",
            "to alt %",
            "lost %",
            "meter drops",
            "core p50 µs",
            "alt p50 µs",
        ],
    )
    table.rows = [
        [r[0] or "max", round(r[1]), *(round(v, 2) for v in r[2:6]), r[6], round(r[7], 1), round(r[8], 1)] for r in rows
    ]
    acct = res.table(
        f"seed 001 on XDP: every packet accounted for (prioritised lane capacity {args.capacity or 'none'} packets/s)",
        [
            "asked pps",
            "sent",
            "accepted (core)",
            "to alt",
            "dropped",
            "of which meter capture",
            "of which cpumap queue",
            "unexplained",
            "prio delivered %",
            "overflow to alt (counted)",
        ],
    )
    acct.rows = [[r[0] or "max", r[12], r[13], r[14], r[15], r[6], r[11], r[16], round(r[9], 2), r[10]] for r in rows]
    acct.note = "accepted + to alt + dropped = sent; prio delivered = prioritised frames received on core or alt"
    worst = min(rows, key=lambda r: r[3])
    res.figure(
        "prioritised half accepted, worst rate",
        worst[3],
        "%",
        note=f"at {worst[1]:.0f} packets/s offered; "
        "beyond the lane's capacity the prioritised overflow goes to alt by design",
    )
    worst = min(rows, key=lambda r: r[9])
    res.figure(
        "prioritised half delivered (core or alt), worst rate",
        worst[9],
        "%",
        goal="100 % up to the sender's limit",
        met=worst[9] >= 99.99,
        note=f"at {worst[1]:.0f} packets/s offered",
    )
    unexplained = max(r[16] for r in rows)
    res.figure(
        "packets unaccounted for (sent - accepted - alt - counted drops), worst rate",
        unexplained,
        "packets",
        goal="0",
        met=unexplained <= 0,
    )
    res.plot(args.out)
    res.write()


def plot(rows: list[tuple], out: Path) -> None:  # type: ignore[type-arg]
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    out.parent.mkdir(parents=True, exist_ok=True)
    offered = [r[1] / 1e3 for r in rows]
    fig, ax = plt.subplots(figsize=(7, 4.5))
    ax.plot(offered, [r[2] for r in rows], "o-", label="accepted on core (prio throughput)")
    ax.plot(offered, [r[4] for r in rows], "s-", label="forwarded to alt (XDP_TX)")
    ax.plot(offered, [r[5] for r in rows], "x-", color="red", label="lost")
    ax.axhline(50, color="green", linestyle="--", label="desired throughput (50 %)")
    ax.set_xlabel("offered load (k packets/s)")
    ax.set_ylabel("% of offered packets")
    ax.set_title("Seed 001 Fig. 4 pattern on XDP (veth testbed), measured by sliceportal traffic")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out, dpi=110)
    print(f"\nplot: {out}")


if __name__ == "__main__":
    main()
