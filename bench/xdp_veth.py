"""Packets per second through the veth testbed with the XDP data plane attached to core,
against an XDP_PASS-only program on the same interface in the same run.

A sender process in ``edge`` writes seed 001's load (16 TEID services, 8 prioritised)
at the frame sizes of seed 001 Table 1 with AF_PACKET for a fixed time;
the figure is what the program on core processed per second, and where it went.
Both run on this machine's 2 shared cores, so the sender is the bottleneck: read the
ratio, not the absolute rate. Needs root. Usage: .venv/bin/python bench/xdp_veth.py [seconds]
"""

from __future__ import annotations

import multiprocessing as mp
import os
import socket
import sys
import time
from pathlib import Path

from _results import Results

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Flow, Underlay, build_bytes
from sliceportal_testbed import Testbed, in_netns
from sliceportal_xdp import libbpf
from sliceportal_xdp.driver import Driver

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "drivers" / "xdp" / "tests"))

from beds import testbed_options  # noqa: E402

SIZES = (1500, 1024, 512, 256, 132)  # seed 001 Table 1


def frames(tb: Testbed, size: int) -> list[bytes]:
    edge, core = tb["edge"], tb["core"]
    u = Underlay(src_mac=edge.mac, dst_mac=core.mac, outer_src=edge.ip, outer_dst=core.ip)
    out = []
    for s in range(16):
        f = Flow("10.45.0.1", "10.60.0.1", 5000 + 2 * s, teid=100 + s, vni=7)
        bare = len(build_bytes(f, b"", u))
        out.append(build_bytes(f, bytes(max(0, size - bare)), u))
    return out


def sender(ns: str, ifname: str, pkts: list[bytes], seconds: float, result: mp.Queue) -> None:  # type: ignore[type-arg]
    with in_netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    s.bind((ifname, 0))
    n, end = 0, time.monotonic() + seconds
    while time.monotonic() < end:
        for p in pkts:
            try:
                s.send(p)
                n += 1
            except OSError:
                pass  # the qdisc is full: count only what went out
    result.put(n)


def blast(tb: Testbed, seconds: float, size: int) -> int:
    q: mp.Queue = mp.Queue()  # type: ignore[type-arg]
    p = mp.get_context("fork").Process(target=sender, args=(tb["edge"].netns, "br0", frames(tb, size), seconds, q))
    p.start()
    n = int(q.get())
    p.join()
    return n


def main() -> None:
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    with Testbed(f"spb{os.getpid() % 100000}-") as tb:
        core = tb["core"]
        with in_netns(core.netns):
            ifindex = socket.if_nametoindex(core.ifname)
        base = libbpf.BpfObject(str(ROOT / "dataplane/xdp/build/pass.bpf.o"))
        base_pps = {}
        with in_netns(core.netns):
            libbpf.xdp_attach(ifindex, base.program_fd("xdp_pass"))
        for size in SIZES:
            rx0 = tb.link_stats("core").rx_packets
            blast(tb, seconds, size)
            base_pps[size] = (tb.link_stats("core").rx_packets - rx0) / seconds
        with in_netns(core.netns):
            libbpf.xdp_detach(ifindex)
        base.close()

        rules = tuple(Rule(Match(teid=Ternary.exact(100 + s, 32)), Action(1, 3 if s < 8 else 2, 0)) for s in range(16))
        d = Driver(testbed_options(tb, alt_lanes=[2]))
        d.apply(d.lower(RuleIR(lanes=4, paths=8, rules=rules)), lambda e: None)
        res = Results("xdp_veth")
        table = res.table(
            "XDP on veth: received packets/s",
            ["frame B", "XDP_PASS-only pps", "sliceportal pps", "ratio", "to cpumap /s", "to alt /s", "alt rx /s"],
        )
        print(
            f"{'bytes':>5} {'pass-only pps':>13} {'sliceportal pps':>15} {'ratio':>6} {'-> cpumap':>10} "
            f"{'-> alt':>10} {'alt rx':>10}"
        )
        for size in SIZES:
            c0, a0 = d.raw_counters(), tb.link_stats("alt").rx_packets
            blast(tb, seconds, size)
            time.sleep(0.2)
            c1, a1 = d.raw_counters(), tb.link_stats("alt").rx_packets
            processed = (c1.globals[0] - c0.globals[0]) / seconds
            steered = sum(c.steered for c in c1.lanes.values()) - sum(c.steered for c in c0.lanes.values())
            to_alt = sum(c.alt for c in c1.lanes.values()) - sum(c.alt for c in c0.lanes.values())
            print(
                f"{size:5d} {base_pps[size]:13.0f} {processed:15.0f} {processed / base_pps[size]:6.2f} "
                f"{steered / seconds:10.0f} {to_alt / seconds:10.0f} {(a1 - a0) / seconds:10.0f}"
            )
            table.rows.append(
                [
                    size,
                    round(base_pps[size]),
                    round(processed),
                    round(processed / base_pps[size], 2),
                    round(steered / seconds),
                    round(to_alt / seconds),
                    round((a1 - a0) / seconds),
                ]
            )
        d.close()
        res.write()


if __name__ == "__main__":
    main()
