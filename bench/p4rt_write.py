"""P4Runtime write throughput against the bundled target: classifier entries per second
one per Write RPC (the baseline) vs. batched, and the target's packets/s.

    .venv/bin/python bench/p4rt_write.py
"""

from __future__ import annotations

import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "dataplane" / "bmv2"), str(ROOT / "drivers" / "p4rt" / "tests")]

from bmv2_target.testing import Target  # noqa: E402
from irs import ip  # noqa: E402
from traffic import frame, run_pcaps, write_pcap  # noqa: E402

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, TenantEntry, Ternary  # noqa: E402
from sliceportal.traffic.packets import Encap, Flow  # noqa: E402
from sliceportal_p4rt.driver import Driver  # noqa: E402

N = 2000


def ir(n: int) -> RuleIR:
    t = TenantEntry(1, "t", 1001, 100)
    s = SliceEntry(1, 1, "s", 1001, 100, (3,))
    rules = tuple(Rule(Match(src_ip=Ternary.exact(ip("10.0.0.0") + i, 32)), Action(1, 3, 0)) for i in range(n))
    return RuleIR(lanes=8, paths=1, rules=rules, slices=(s,), tenants=(t,))


def push_rate(batch: int) -> float:
    t = Target("--priority-queues", "8")
    try:
        d = Driver({"address": t.address, "batch_size": batch})
        plan = d.lower(ir(N))
        start = time.perf_counter()
        d.apply(plan, lambda e: None)
        rate = N / (time.perf_counter() - start)
        d.close()
        return rate
    finally:
        t.stop()


def packet_rate(n: int = 20000) -> float:
    t = Target("--priority-queues", "8", "--link-rate-bps", "1000000000")
    try:
        d = Driver({"address": t.address})
        d.apply(d.lower(ir(64)), lambda e: None)
        data = frame(Flow("10.0.0.5", "10.2.0.1", 5000, vni=1001, vlan=100, encap=Encap.VXLAN_GTP), 200)[0]
        with tempfile.TemporaryDirectory() as tmp:
            write_pcap(Path(tmp) / "in.pcap", [(10**9 + i * 2000, data) for i in range(n)])
            start = time.perf_counter()
            run_pcaps(t.address, {1: Path(tmp) / "in.pcap"}, Path(tmp) / "out")
            rate = n / (time.perf_counter() - start)
        d.close()
        return rate
    finally:
        t.stop()


if __name__ == "__main__":
    one = push_rate(1)
    print(f"write, 1 entry / request : {one:8.0f} entries/s  (baseline 1.00x)")
    for b in (100, 500, 1000):
        r = push_rate(b)
        print(f"write, batch {b:4d}        : {r:8.0f} entries/s  ({r / one:.2f}x)")
    pps = packet_rate()
    print(f"target pipeline (pcap)   : {pps:8.0f} packets/s (incl. pcap I/O; BMv2 ~17 k/s per TOOLCHAIN.md)")
