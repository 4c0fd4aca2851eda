"""XDP program cost in ns/packet (BPF_PROG_TEST_RUN with repeat), next to an XDP_PASS-only
program measured in the same run: the ratio is the figure (TOOLCHAIN.md: machines differ).

Paths measured on seed 001's load (16 services by TEID, 8 prioritised):
full GTP-in-VXLAN (prioritised -> cpumap redirect; not prioritised -> alt rewrite +
XDP_TX), GTP-only, plain. Needs root. Usage: .venv/bin/python bench/xdp_cost.py [repeat]
"""

from __future__ import annotations

import statistics
import sys
from pathlib import Path

from _results import Results, quick

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.libbpf import VERDICTS, BpfObject, test_run

ROOT = Path(__file__).resolve().parents[1]
PACKET_BYTES = 160  # TOOLCHAIN.md reference size
OPTIONS = {"alt_mac": "02:00:00:00:00:09", "alt_ip": "10.9.9.9", "alt_lanes": [2], "overload_poll_s": 0}


def seed001_ir() -> RuleIR:
    rules = tuple(Rule(Match(teid=Ternary.exact(100 + s, 32)), Action(1, 3 if s < 8 else 2, s % 8)) for s in range(16))
    return RuleIR(lanes=4, paths=8, rules=rules)


def sized(flow: Flow) -> bytes:
    bare = len(build_bytes(flow))
    return build_bytes(flow, bytes(max(0, PACKET_BYTES - bare)))


def best_of(fd: int, pkt: bytes, repeat: int, runs: int = 5) -> float:
    return statistics.median(test_run(fd, pkt, repeat).duration_ns for _ in range(runs))


def main() -> None:
    repeat = int(sys.argv[1]) if len(sys.argv) > 1 else 100_000 if quick() else 1_000_000
    res = Results("xdp_cost")
    table = res.table("XDP cost per path", ["path", "verdict", "ns/packet", "x XDP_PASS", "Mpps/core"])
    d = Driver(OPTIONS)
    d.apply(d.lower(seed001_ir()), lambda e: None)
    base = BpfObject(str(ROOT / "dataplane/xdp/build/pass.bpf.o"))
    pass_fd = base.program_fd("xdp_pass")
    cases = {
        "vxlan+gtp prioritised": sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=100, vni=7)),
        "vxlan+gtp to alt": sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=110, vni=7)),
        "gtp prioritised": sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=100, encap=Encap.GTP)),
        "plain miss": sized(Flow("10.45.0.1", "10.60.0.1", 5000, encap=Encap.PLAIN)),
    }
    pass_ns = best_of(pass_fd, cases["vxlan+gtp prioritised"], repeat)
    print(f"XDP_PASS-only baseline: {pass_ns:.1f} ns/packet ({1e3 / pass_ns:.1f} Mpps per core)")
    table.rows.append(["XDP_PASS only (baseline)", "pass", round(pass_ns, 1), 1.0, round(1e3 / pass_ns, 1)])
    mix = []
    print(f"{'path':28} {'verdict':9} {'ns/pkt':>7} {'x pass':>7} {'Mpps/core':>10}")
    for name, pkt in cases.items():
        verdict = VERDICTS[test_run(d.dataplane.prog_fd, pkt).retval]
        ns = best_of(d.dataplane.prog_fd, pkt, repeat)
        print(f"{name:28} {verdict:9} {ns:7.1f} {ns / pass_ns:7.2f} {1e3 / ns:10.1f}")
        table.rows.append([name, verdict, round(ns, 1), round(ns / pass_ns, 2), round(1e3 / ns, 1)])
        mix.append(ns)
        if name == "vxlan+gtp prioritised":
            res.figure("flow-cache hit (GTP-in-VXLAN, prioritised), ns/packet", ns, "ns", baseline=pass_ns,
                       baseline_name="empty XDP_PASS program", goal="<= 1.5 x baseline", met=ns / pass_ns <= 1.5)
    avg = statistics.mean(mix)
    res.figure("seed 001 mix (parse + classify + steer), ns/packet", avg, "ns", baseline=pass_ns,
               baseline_name="empty XDP_PASS program", goal="<= 2.0 x baseline", met=avg / pass_ns <= 2.0)
    # the classifier itself (every packet of a new flow pays this once per generation)
    cold = Driver({**OPTIONS, "flow_cache": False})
    cold.apply(cold.lower(seed001_ir()), lambda e: None)
    pkt = cases["vxlan+gtp prioritised"]
    ns = best_of(cold.dataplane.prog_fd, pkt, repeat)
    print(
        f"{'vxlan+gtp prio, no cache':28} {VERDICTS[test_run(cold.dataplane.prog_fd, pkt).retval]:9} {ns:7.1f} "
        f"{ns / pass_ns:7.2f} {1e3 / ns:10.1f}"
    )
    print(f"({len(pkt)}-byte packets, repeat {repeat}, median of 5 runs)")
    table.rows.append(["vxlan+gtp prio, no cache", VERDICTS[test_run(cold.dataplane.prog_fd, pkt).retval],
                       round(ns, 1), round(ns / pass_ns, 2), round(1e3 / ns, 1)])
    res.figure("classifier with the flow cache off, ns/packet", ns, "ns", baseline=pass_ns,
               baseline_name="empty XDP_PASS program")
    table.note = f"{len(pkt)}-byte packets, BPF_PROG_TEST_RUN repeat {repeat}, median of 5 runs"
    res.write()
    cold.close()
    base.close()
    d.close()


if __name__ == "__main__":
    main()
