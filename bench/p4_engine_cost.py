"""The bundled target's packet engine in process, ns/packet (issue #30 item 4: slicing.p4
from ~800 ns to <= 300 ns): thread CPU time and wall clock of ingress + egress + deparser,
the loop in Rust (``Engine.time_loop``; a Python call per packet would time Python).

slicing.p4 (``compiled/slicing.json``) holds what the p4rt driver writes for one tenant on
access port 1 with an uplink trunk, and seed 001's 16 services by TEID (8 prioritised) in a
slice with a virtual queue, written through the bundled target's own P4Runtime path. Frames:
the engine speed test's 200 B plain UDP frame, and 200 B GTP-in-VXLAN frames of a
prioritised service (a classifier hit) and of no service (a miss). The baseline, in the same
rounds: a p4c program that parses Ethernet and forwards (``bench/p4/forward_floor.p4``), the
floor any program costs. All cases run round-robin, medians over the rounds.

    .venv/bin/python -m bench p4_engine_cost      # BENCH_QUICK=1 for the short form
"""

from __future__ import annotations

import statistics
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "dataplane" / "bmv2")]

from _results import Results, quick  # noqa: E402
from bmv2_target.engine import Engine  # noqa: E402
from bmv2_target.p4info_index import P4InfoIndex  # noqa: E402
from bmv2_target.server import Faults, P4RuntimeServicer, load_p4info_text  # noqa: E402
from bmv2_target.switch import Switch, SwitchConfig  # noqa: E402
from bmv2_target.testing import P4INFO  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, TenantEntry, Ternary  # noqa: E402
from sliceportal.traffic.packets import Flow, build_bytes  # noqa: E402
from sliceportal_p4rt.driver import Driver  # noqa: E402

PACKETS = 20_000 if quick() else 200_000  # per case and round
ROUNDS = 5 if quick() else 9
FRAME_BYTES = 200
SOJOURN_US = 3  # each packet's time in the traffic manager (egress telemetry)
GOAL_NS = 300.0  # issue #30 item 4
OPTIONS = {"access_ports": {1: 100}, "trunk_ports": [2], "uplink_port": 2}
FLOOR_P4 = Path(__file__).resolve().parent / "p4" / "forward_floor.p4"


def seed001_ir() -> RuleIR:
    """One tenant and slice; 16 services by TEID, the first 8 in lane 3, the rest in lane 1."""
    t = TenantEntry(1, "t", 1001, 100)
    s = SliceEntry(1, 1, "s", 1001, 100, (1, 3), Qos(rate_bps=10**10, burst_ms=5, ecn_ms=1))
    rules = tuple(Rule(Match(teid=Ternary.exact(100 + i, 32)), Action(1, 3 if i < 8 else 1, 0)) for i in range(16))
    return RuleIR(lanes=8, paths=1, rules=rules, slices=(s,), tenants=(t,))


def slicing_engine() -> Engine:
    """The bundled target's engine for slicing.p4 with the driver's entries, written through
    the target's own P4Runtime write path (as bench/p4rt_write.py's in-process figure)."""
    sw = Switch(SwitchConfig(priority_queues=8))
    sw.load(P4InfoIndex.of(load_p4info_text(P4INFO)))
    servicer = P4RuntimeServicer(sw, 1, Faults())
    d = Driver({"address": "127.0.0.1:1", **OPTIONS})  # lower / encode only, never connects
    for table, entries in d.lower(seed001_ir()).tables.items():
        for e in entries:
            kind = p4runtime_pb2.Update.MODIFY if e.get("default") or "index" in e else p4runtime_pb2.Update.INSERT
            servicer._apply(d.codec.update(kind, table, e))
    assert sw.tables is not None and sw.pipeline is not None
    sw.tables.commit()
    return sw.pipeline


def floor_engine() -> Engine:
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run(
            [
                "p4c",
                "--target",
                "bmv2",
                "--arch",
                "v1model",
                "--std",
                "p4-16",
                "-Xp4c=--Werror",
                "-o",
                tmp,
                str(FLOOR_P4),
            ],
            check=True,
        )
        return Engine((Path(tmp) / "forward_floor.json").read_text())


def speed_test_frame() -> bytes:
    """exec.rs ``mod speed``'s frame: Ethernet / IPv4 / UDP 40000 -> 5000, zero-padded."""
    head = bytes([2, 0, 0, 0, 0, 2, 2, 0, 0, 0, 0, 1, 0x08, 0x00, 0x45, 0, 0, 186])
    head += bytes([0, 1, 0, 0, 64, 17, 0, 0, 10, 1, 0, 5, 10, 9, 0, 1, 0x9C, 0x40, 0x13, 0x88, 0, 166, 0, 0])
    return head.ljust(FRAME_BYTES, b"\0")


def sized(flow: Flow) -> bytes:
    return build_bytes(flow, bytes(max(0, FRAME_BYTES - len(build_bytes(flow)))))


def main() -> None:
    slicing, floor = slicing_engine(), floor_engine()
    cases: dict[str, tuple[Engine, bytes]] = {
        "floor: parse Ethernet, forward": (floor, speed_test_frame()),
        "plain UDP (the speed test's frame)": (slicing, speed_test_frame()),
        "GTP-in-VXLAN, prioritised (classifier hit)": (
            slicing,
            sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=100, vni=1001)),
        ),
        "GTP-in-VXLAN, no service (classifier miss)": (
            slicing,
            sized(Flow("10.45.0.1", "10.60.0.1", 5000, teid=999, vni=1001)),
        ),
    }
    for name, (engine, frame) in cases.items():
        _, _, sent = engine.time_loop(frame, 1, PACKETS // 10, SOJOURN_US)  # warm caches and counters
        assert sent == PACKETS // 10, f"{name}: {sent} of {PACKETS // 10} forwarded"
    cpu: dict[str, list[float]] = {k: [] for k in cases}
    wall: dict[str, list[float]] = {k: [] for k in cases}
    for _ in range(ROUNDS):
        for name, (engine, frame) in cases.items():
            c, w, sent = engine.time_loop(frame, 1, PACKETS, SOJOURN_US)
            assert sent == PACKETS, f"{name}: {sent} of {PACKETS} forwarded"
            cpu[name].append(c)
            wall[name].append(w)
    med = {k: statistics.median(v) for k, v in cpu.items()}
    floor_ns = med["floor: parse Ethernet, forward"]

    res = Results("p4_engine_cost")
    table = res.table("Engine cost in process", ["program, frame", "CPU ns/packet", "wall ns/packet", "x floor"])
    print(f"{'program, frame':56} {'CPU ns':>7} {'wall ns':>8} {'x floor':>8}")
    for name in cases:
        w = statistics.median(wall[name])
        label = name if name.startswith("floor") else f"slicing.p4, {name}"
        print(f"{label:56} {med[name]:7.0f} {w:8.0f} {med[name] / floor_ns:8.2f}")
        table.rows.append([label, round(med[name]), round(w), round(med[name] / floor_ns, 2)])
    table.note = (
        f"{FRAME_BYTES} B frames, ingress + egress + deparser in a Rust loop ({PACKETS} packets a case and "
        f"round, {ROUNDS} rounds round-robin, medians); CPU = the thread's CPU time; per-round CPU ns of the "
        "GTP-in-VXLAN hit: " + ", ".join(f"{v:.0f}" for v in cpu["GTP-in-VXLAN, prioritised (classifier hit)"])
    )
    base = {"baseline": floor_ns, "baseline_name": "parse-Ethernet-and-forward program, same loop"}
    for name, label in (
        ("GTP-in-VXLAN, prioritised (classifier hit)", "GTP-in-VXLAN prioritised"),
        ("plain UDP (the speed test's frame)", "the speed test's plain UDP frame"),
    ):
        res.figure(
            f"slicing.p4 in-process, ns/packet ({label})",
            round(med[name], 1),
            "ns",
            **base,
            goal=f"<= {GOAL_NS:.0f} ns (issue #30)",
            met=med[name] <= GOAL_NS,
            note="thread CPU time",
        )
    res.figure("engine floor in-process (parse Ethernet, forward), ns/packet", round(floor_ns, 1), "ns")
    res.write()


if __name__ == "__main__":
    main()
