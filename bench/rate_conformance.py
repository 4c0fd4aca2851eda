"""Rate-limit conformance on every data plane that enforces per-slice limits (issue #17):
per slice, offered 0.99 x the limit -> 0 loss; offered 2 x -> 50 % +- 1 % loss; and the rate
that passes at seed 004's 48 / 12 / 240 Mbit/s within +- 5 % of the configured limit.

Run: .venv/bin/python bench/rate_conformance.py   (needs `make -C dataplane/netfpga all`)

* NetFPGA: the Verilator model in simulated time (cycle-accurate, so rates are exact): the
  driver pushes the limit, the stream is injected with the idle gap that gives the offered
  rate at 200 MHz (``sliceportal_netfpga.rate_experiment``); seed 004's rates plus 1 and
  10 Gbit/s.
* P4: the bundled P4Runtime target running pcaps on their own timestamps (as
  drivers/p4rt/tests/test_experiments.py does for seed 004), the vQueue of slicing.p4 with
  seed 004's three slices at once, 1400-byte frames; loss and rate over the stream after a
  warm-up (the burst allowance, C_DELAY).
* XDP: the real kernel (``sliceportal_xdp.rate_experiment``): the program attached natively
  to a veth end, fed through a ``tbf`` qdisc at the offered rate on the other end (the
  kernel paces, a blocking AF_PACKET sender keeps it busy), 3000-byte frames; offered and
  passed from the program's own per-slice counters over a window after a warm-up. Why
  tbf and not BPF_PROG_TEST_RUN: docs/xdp.md "Rate-limit conformance".

Baseline of every figure: the configured limit (value / baseline = measured / configured).
The PNG plots measured / configured per backend and rate ("rate-limit accuracy").
"""

from __future__ import annotations

import argparse
import tempfile
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from _results import Results, plots_dir, quick

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.traffic.packets import Encap, Flow, build
from sliceportal_netfpga.rate_experiment import conformance
from sliceportal_testbed.processes import start_p4runtime_target

SEED004 = {"DC": (48e6, 20.0), "Enterprise": (12e6, 10.0), "Peering": (240e6, 30.0)}  # rate, burst ms (Table II)
FACTORS = (0.99, 2.0)


@dataclass(frozen=True)
class Point:
    backend: str
    rate_bps: float
    factor: float
    frame_bytes: int
    offered_bps: float
    passed_bps: float
    sent: int
    passed: int

    @property
    def loss(self) -> float:
        return 1 - self.passed / self.sent if self.sent else 0.0

    @property
    def accuracy(self) -> float:
        """Measured / configured where the limit binds; passed / offered below it."""
        return self.passed_bps / (self.rate_bps if self.factor > 1 else self.offered_bps)


def netfpga(packets: int, rates: list[float]) -> list[Point]:
    pts = conformance([(r, f) for r in rates for f in FACTORS], packets)
    return [
        Point("NetFPGA (RTL model)", p.rate_bps, p.factor, p.frame_bytes, p.offered_bps, p.passed_bps, p.sent, p.passed)
        for p in pts
    ]


def _ip(s: str) -> int:
    return int.from_bytes(bytes(int(x) for x in s.split(".")), "big")


def p4(duration_s: float, warmup_s: float) -> list[Point]:
    """Seed 004's slices on the bundled target, all three at once per offered factor."""
    import json

    import grpc
    from scapy.utils import PcapWriter, RawPcapReader

    from sliceportal_p4rt.driver import Driver

    tenant = TenantEntry(1, "operator", 1001, 100)
    slices, rules, flows = [], [], {}
    for sid, (name, (rate, burst)) in enumerate(SEED004.items(), start=1):
        slices.append(SliceEntry(sid, sid, name, 1001, 100, (7 - sid,), Qos(rate_bps=int(rate), burst_ms=burst)))
        dst = f"192.168.{sid}.1"
        rules.append(Rule(Match(dst_ip=Ternary.exact(_ip(dst), 32)), Action(sid, 7 - sid, 0), name))
        flows[sid] = Flow("10.1.0.1", dst, 5001, vni=1001, teid=7, vlan=100, encap=Encap.VXLAN_GTP)
    ir = RuleIR(lanes=8, paths=1, rules=tuple(rules), slices=tuple(slices), tenants=(tenant,))
    out: list[Point] = []
    for factor in FACTORS:
        target = start_p4runtime_target("--priority-queues", "8")
        d = Driver({"address": target.address, "trunk_ports": [1, 2], "uplink_port": 2})
        try:
            d.apply(d.lower(ir), lambda _: None)
            with tempfile.TemporaryDirectory() as tmp:
                work = Path(tmp)
                packets: list[tuple[int, bytes, int]] = []
                frames = {}
                for sid, (rate, _) in enumerate(SEED004.values(), start=1):
                    pkt = build(flows[sid])
                    frames[sid] = bytes(build(flows[sid], bytes(max(0, 1400 - len(pkt)))))
                    gap_ns = len(frames[sid]) * 8 * 1e9 / (rate * factor)
                    n = int(duration_s * 1e9 / gap_ns)
                    packets += [(int(1e9 + i * gap_ns + sid), frames[sid], sid) for i in range(n)]
                w = PcapWriter(str(work / "in.pcap"), linktype=1, sync=False)
                w.write_header(None)
                for t, data, _ in sorted(packets, key=lambda p: p[0]):
                    sec, ns = divmod(t, 1_000_000_000)
                    w.write_packet(data, sec=sec, usec=ns // 1000)
                w.close()
                with grpc.insecure_channel(target.address) as ch:
                    call = ch.unary_unary("/sliceportal.bmv2.Dataplane/RunPcaps")
                    call(
                        json.dumps({"inputs": {"1": str(work / "in.pcap")}, "out_dir": str(work / "out")}).encode(),
                        timeout=600,
                    )
                start, end = int((1.0 + warmup_s) * 1e9), int((1.0 + duration_s) * 1e9)
                sent = Counter(sid for t, _, sid in packets if start <= t < end)
                passed: Counter[int] = Counter()
                by_dst = {_ip(f"192.168.{sid}.1").to_bytes(4, "big"): sid for sid in flows}
                with RawPcapReader(str(work / "out" / "port2.pcap")) as r:
                    scale = 1 if getattr(r, "nano", False) else 1000
                    for data, meta in r:
                        t = meta.sec * 1_000_000_000 + meta.usec * scale
                        sid = next((s for k, s in by_dst.items() if k in data), None)
                        if sid is not None and start <= t < end:
                            passed[sid] += 1
        finally:
            d.close()
            target.stop()
        window = duration_s - warmup_s
        for sid, (rate, _) in enumerate(SEED004.values(), start=1):
            size = len(frames[sid])
            out.append(
                Point(
                    "P4 (bundled target, vQueue)",
                    rate,
                    factor,
                    size,
                    sent[sid] * size * 8 / window,
                    passed[sid] * size * 8 / window,
                    sent[sid],
                    min(passed[sid], sent[sid]),
                )
            )
    return out


def xdp(window_s: float, warmup_s: float) -> list[Point]:
    """Seed 004's slices on the XDP program in the kernel, one at a time per offered factor."""
    from sliceportal_xdp.rate_experiment import measure

    cases = [(rate, burst, f) for rate, burst in SEED004.values() for f in FACTORS]
    return [
        Point(XDP_BACKEND, p.rate_bps, p.factor, p.frame_bytes, p.offered_bps, p.passed_bps, p.offered, p.passed)
        for p in measure(cases, window_s, warmup_s)
    ]


XDP_BACKEND = "XDP (kernel, tbf-paced veth)"


def plot(points: list[Point], out: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    from matplotlib.ticker import NullFormatter

    fig, axes = plt.subplots(1, 2, figsize=(11, 4.5))
    for ax, factor, title in (
        (axes[0], 2.0, "offered 2 x limit: passed / configured"),
        (axes[1], 0.99, "offered 0.99 x limit: passed / offered"),
    ):
        for backend, marker in (("NetFPGA (RTL model)", "o"), ("P4 (bundled target, vQueue)", "s"), (XDP_BACKEND, "^")):
            pts = [p for p in points if p.backend == backend and p.factor == factor]
            ax.plot([p.rate_bps / 1e6 for p in pts], [p.accuracy for p in pts], marker, label=backend, markersize=8)
        ax.axhspan(0.95, 1.05, color="green", alpha=0.12, label="+- 5 %")
        ax.axhline(1.0, color="grey", linewidth=0.8)
        ax.set_xscale("log")
        rates = sorted({p.rate_bps / 1e6 for p in points})
        ax.set_xticks(rates, [f"{r:g}" for r in rates])
        ax.xaxis.set_minor_formatter(NullFormatter())
        ax.set_xlabel("configured rate limit (Mbit/s)")
        ax.set_ylim(0.85, 1.15)
        ax.set_title(title)
        ax.legend()
    fig.suptitle("Rate-limit accuracy per backend (measured / configured)")
    fig.tight_layout()
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110)
    print(f"plot: {out}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=plots_dir() / "rate_accuracy.png")
    args = ap.parse_args()
    q = quick()
    res = Results("rate_conformance")
    seed = [r for r, _ in SEED004.values()]
    points = netfpga(150 if q else 200, seed + ([] if q else [1e9, 10e9]))
    points += p4(0.3 if q else 1.0, 0.1 if q else 0.2)
    points += xdp(1.0 if q else 3.0, 0.5)
    table = res.table(
        "Rate-limit conformance (offered 0.99 x and 2 x the limit)",
        [
            "backend",
            "limit Mbit/s",
            "offered x",
            "frame B",
            "offered Mbit/s",
            "passed Mbit/s",
            "sent",
            "passed",
            "loss %",
            "measured / configured",
        ],
    )
    print(
        f"{'backend':<28} {'limit':>8} {'x':>5} {'frame':>5} {'offered':>9} {'passed':>9} {'sent':>6} "
        f"{'passed':>6} {'loss %':>7} {'meas/conf':>9}"
    )
    for p in points:
        acc = p.passed_bps / p.rate_bps
        print(
            f"{p.backend:<28} {p.rate_bps / 1e6:>8g} {p.factor:>5} {p.frame_bytes:>5} {p.offered_bps / 1e6:>9.3f} "
            f"{p.passed_bps / 1e6:>9.3f} {p.sent:>6} {p.passed:>6} {100 * p.loss:>7.2f} {acc:>9.4f}"
        )
        table.rows.append(
            [
                p.backend,
                round(p.rate_bps / 1e6, 3),
                p.factor,
                p.frame_bytes,
                round(p.offered_bps / 1e6, 3),
                round(p.passed_bps / 1e6, 3),
                p.sent,
                p.passed,
                round(100 * p.loss, 2),
                round(acc, 4),
            ]
        )
    for backend in sorted({p.backend for p in points}):
        mine = [p for p in points if p.backend == backend]
        under = max(p.loss for p in mine if p.factor < 1)
        res.figure(f"{backend}: worst loss at 0.99 x the limit", 100 * under, "%", goal="0 % loss", met=under == 0)
        over = max(abs(p.loss - 0.5) for p in mine if p.factor > 1)
        res.figure(
            f"{backend}: worst |loss - 50 %| at 2 x the limit",
            100 * over,
            "points",
            goal="<= 1 point (50 % +- 1 %)",
            met=over <= 0.01,
        )
        for p in (p for p in mine if p.factor > 1 and p.rate_bps in seed):
            res.figure(
                f"{backend}: seed 004 {p.rate_bps / 1e6:g} Mbit/s, passed at 2 x",
                p.passed_bps / 1e6,
                "Mbit/s",
                baseline=p.rate_bps / 1e6,
                baseline_name="configured limit",
                goal="within +- 5 % of the limit",
                met=abs(p.passed_bps / p.rate_bps - 1) <= 0.05,
            )
    plot(points, args.out)
    res.plot(args.out)
    res.write()


if __name__ == "__main__":
    main()
