"""P4Runtime writes/s and forwarding packets/s of the bundled target and of the real BMv2
(``simple_switch_grpc``), side by side in one run, on the same p4c build of slicing.p4.

Writes: classifier entries pushed by the p4rt driver (``apply`` of a fresh rule set lowered by
the same driver: diff against the state the driver holds, the bytes ``lower`` pre-encoded,
batches pipelined) one per request and in batches, against a bare P4Runtime client writing
the same, already built protobuf updates on the same kind of switch (the driver's own cost is
the ratio). ``lower`` (the native plan, the IR digest, the pre-encoding) is timed apart. Each
rate is the median of TRIALS pushes, each into a fresh switch: on a machine shared with other
work a single 4000-entry push (tens of ms) varies several-fold from run to run.

Forwarding: the same frames offered over veth pairs by a native batched sender, to both
switches on live ports (needs root), plus the bundled target's pcap replay and its compiled
engine (p4c's JSON executed in Rust) driven in process without packet I/O.

    .venv/bin/python bench/p4rt_write.py          # BENCH_QUICK=1 for the short form
"""

from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "dataplane" / "bmv2"), str(ROOT / "drivers" / "p4rt" / "tests")]

from _results import Results, quick  # noqa: E402
from bmv2_target.engine import offer_closed_loop  # noqa: E402
from bmv2_target.p4info_index import P4InfoIndex  # noqa: E402
from bmv2_target.server import Faults, P4RuntimeServicer, load_p4info_text  # noqa: E402
from bmv2_target.switch import Switch as TargetSwitch  # noqa: E402
from bmv2_target.switch import SwitchConfig  # noqa: E402
from bmv2_target.testing import P4INFO, Target  # noqa: E402
from irs import ip  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from traffic import frame, run_pcaps, veth_ports, write_pcap  # noqa: E402

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, TenantEntry, Ternary  # noqa: E402
from sliceportal.traffic.packets import Encap, Flow  # noqa: E402
from sliceportal_p4rt.client import Session  # noqa: E402
from sliceportal_p4rt.driver import Driver  # noqa: E402
from sliceportal_p4rt.p4info import CLASSIFIER  # noqa: E402
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc  # noqa: E402

N = 500 if quick() else 4000  # the classifier holds 4096
TRIALS = 3 if quick() else 5
PACKETS = 5000 if quick() else 100000
WARMUP = 2000  # frames through a switch before its forwarding is timed
FWD_ROUNDS = 1 if quick() else 3  # live forwarding rounds, the targets interleaved
BATCHES = (1, 500)
WINDOW = 256  # frames in flight through a switch in the forwarding measurement
OPTIONS = {"access_ports": {1: 100}, "trunk_ports": [2], "uplink_port": 2}

Starter = Callable[[dict[int, str] | None], "Switch"]


class Switch:
    def __init__(self, address: str, stop: Callable[[], None]) -> None:
        self.address, self.stop = address, stop


def bundled(interfaces: dict[int, str] | None = None) -> Switch:
    args = ["--priority-queues", "8"]
    for p, dev in (interfaces or {}).items():
        args += ["-i", f"{p}@{dev}"]
    t = Target(*args)
    return Switch(t.address, t.stop)


def bmv2(interfaces: dict[int, str] | None = None) -> Switch:
    s = start_simple_switch_grpc(interfaces or {}, priority_queues=8)
    return Switch(s.address, s.stop)


TARGETS: dict[str, Starter] = {"bundled target": bundled, "simple_switch_grpc": bmv2}


def ir(n: int, first: int = 0) -> RuleIR:
    t = TenantEntry(1, "t", 1001, 100)
    s = SliceEntry(1, 1, "s", 1001, 100, (3,))
    rules = tuple(
        Rule(Match(src_ip=Ternary.exact(ip("10.0.0.0") + i, 32)), Action(1, 3, 0)) for i in range(first, first + n)
    )
    return RuleIR(lanes=8, paths=1, rules=rules, slices=(s,), tenants=(t,))


def driver_rate(start: Starter, batch: int) -> tuple[float, float]:
    """(entries/s of Driver.apply, seconds of Driver.lower) (connection and pipeline push
    excluded)."""
    sw = start(None)
    try:
        d = Driver({"address": sw.address, "batch_size": batch, **OPTIONS})
        d.health()  # connect and push the pipeline before the clock starts
        t0 = time.perf_counter()
        plan = d.lower(ir(N))
        lowered = time.perf_counter() - t0
        t0 = time.perf_counter()
        result = d.apply(plan, lambda e: None)
        rate = N / (time.perf_counter() - t0)
        assert result.added >= N
        d.close()
        return rate, lowered
    finally:
        sw.stop()


def update_rate(start: Starter, batch: int) -> tuple[float, int]:
    """(updates/s, updates) of Driver.apply changing a rule set it pushed: N / 2 entries, then
    the set with its first half replaced (N / 4 deletes and N / 4 inserts, make-before-break;
    the kept entries keep their priorities): the diff against held state, not a fresh table."""
    sw = start(None)
    try:
        d = Driver({"address": sw.address, "batch_size": batch, **OPTIONS})
        d.apply(d.lower(ir(N // 2)), lambda e: None)
        plan = d.lower(ir(N // 2, first=N // 4))
        t0 = time.perf_counter()
        result = d.apply(plan, lambda e: None)
        elapsed = time.perf_counter() - t0
        written = result.added + result.removed + result.modified
        assert result.added >= N // 4 and result.removed >= N // 4
        d.close()
        return written / elapsed, written
    finally:
        sw.stop()


def bare_rate(start: Starter, batch: int) -> float:
    """Entries/s of a bare client writing the same updates, built before the clock starts."""
    sw = start(None)
    try:
        d = Driver({"address": sw.address, **OPTIONS})
        d.health()
        plan = d.lower(ir(N))
        updates = [d.codec.update(p4runtime_pb2.Update.INSERT, CLASSIFIER, e) for e in plan.tables[CLASSIFIER]]
        d.close()
        s = Session(sw.address, 1, 2)
        t0 = time.perf_counter()
        for i in range(0, len(updates), batch):
            s.write(updates[i : i + batch])
        rate = len(updates) / (time.perf_counter() - t0)
        s.close()
        return rate
    finally:
        sw.stop()


@contextmanager
def veths() -> Iterator[dict[int, tuple[str, str]]]:
    with veth_ports(f"pb{os.getpid() % 100000}", (1, 2)) as ends:
        yield ends


def test_frame() -> bytes:
    return frame(Flow("10.0.0.5", "10.2.0.1", 5000, vni=1001, encap=Encap.VXLAN_GTP), 200)[0]


def live_pps(start: Starter) -> tuple[float, float]:
    """(offered, forwarded) packets/s: PACKETS frames into port 1 with at most WINDOW of them
    inside the switch at a time (a closed loop, so that the measure is the switch's capacity,
    not how much of an unpaced burst its input buffer drops), counted on port 2. The sender
    and the counter are native and batched (sendmmsg / a PACKET_MMAP ring, the engine crate's
    ``offer_closed_loop``): a Python socket call per frame offered about 50 kpps, as much as
    the switch it measured. WARMUP frames go through first, untimed: what a switch does once
    (threads, buffers, first lookups) is not its rate."""
    with veths() as ends:
        sw = start({p: s for p, (s, _) in ends.items()})
        try:
            d = Driver({"address": sw.address, **OPTIONS})
            d.apply(d.lower(ir(64)), lambda e: None)
            offer_closed_loop(ends[1][1], ends[2][1], test_frame(), WARMUP, WINDOW)
            _sent, _got, offered, forwarded = offer_closed_loop(ends[1][1], ends[2][1], test_frame(), PACKETS, WINDOW)
            d.close()
            return offered, forwarded
        finally:
            sw.stop()


def sender_pps() -> float:
    """The measuring tool's own ceiling: the same closed loop over one veth pair, no switch."""
    with veth_ports(f"ps{os.getpid() % 100000}", (1,)) as ends:
        a, b = ends[1]
        offer_closed_loop(b, a, test_frame(), WARMUP, WINDOW)
        return float(offer_closed_loop(b, a, test_frame(), PACKETS, WINDOW)[3])


def pcap_pps() -> float:
    sw = bundled()
    try:
        d = Driver({"address": sw.address, **OPTIONS})
        d.apply(d.lower(ir(64)), lambda e: None)
        data = test_frame()
        with tempfile.TemporaryDirectory() as tmp:
            write_pcap(Path(tmp) / "in.pcap", [(10**9 + i * 2000, data) for i in range(PACKETS)])
            t0 = time.perf_counter()
            run_pcaps(sw.address, {1: Path(tmp) / "in.pcap"}, Path(tmp) / "out")
            rate = PACKETS / (time.perf_counter() - t0)
        d.close()
        return rate
    finally:
        sw.stop()


def engine_pps() -> tuple[float, float]:
    """(engine alone, engine + traffic manager) packets/s in process: the bundled target's
    switch loaded with the same rules through its own P4Runtime write path, the frames fed
    straight to the compiled engine (ingress + egress + deparser), no sockets or pcaps."""
    sw = TargetSwitch(SwitchConfig(priority_queues=8))
    sw.load(P4InfoIndex.of(load_p4info_text(P4INFO)))
    servicer = P4RuntimeServicer(sw, 1, Faults())
    d = Driver({"address": "127.0.0.1:1", **OPTIONS})  # lower / encode only, never connects
    for table, entries in d.lower(ir(64)).tables.items():
        for e in entries:
            kind = p4runtime_pb2.Update.MODIFY if e.get("default") or "index" in e else p4runtime_pb2.Update.INSERT
            servicer._apply(d.codec.update(kind, table, e))
    assert sw.tables is not None and sw.pipeline is not None
    sw.tables.commit()
    data, engine = test_frame(), sw.pipeline
    t0 = time.perf_counter()
    for i in range(PACKETS):
        f = engine.ingress(data, 1, i)
        assert f is not None and engine.egress(f, i) is not None
    alone = PACKETS / (time.perf_counter() - t0)
    t0 = time.perf_counter()
    out = sw.run((10**9 + i * 2000, 1, data) for i in range(PACKETS))
    with_tm = PACKETS / (time.perf_counter() - t0)
    assert len(out) == PACKETS
    return alone, with_tm


def main() -> int:
    results = Results("p4rt_write")
    writes = results.table(
        "P4Runtime writes (classifier entries)",
        ["target", "batch", "driver entries/s", "bare client entries/s", "driver / bare", "lower s"],
        note=f"{N} entries, median of {TRIALS} pushes each into a fresh switch; driver = Driver.apply of a "
        "plan the same driver lowered (diff against the state it holds, pre-encoded bytes, pipelined batches); "
        "bare = a client writing prebuilt protobuf Update messages (serialized by protobuf in the RPC, as a "
        "plain client does); lower s = Driver.lower of the rule set (IR digest, priorities, pre-encoding)",
    )
    rates: dict[tuple[str, int, str], float] = {}
    for name, start in TARGETS.items():
        for batch in BATCHES:
            runs = [driver_rate(start, batch) for _ in range(TRIALS)]
            drv = statistics.median(r for r, _ in runs)
            lowered = statistics.median(t for _, t in runs)
            bare = statistics.median(bare_rate(start, batch) for _ in range(TRIALS))
            rates[name, batch, "driver"], rates[name, batch, "bare"] = drv, bare
            writes.rows.append([name, batch, round(drv), round(bare), round(drv / bare, 2), round(lowered, 3)])
            print(
                f"{name:20} batch {batch:4d}: driver {drv:8.0f}/s  bare {bare:8.0f}/s  ({drv / bare:.2f}x)  "
                f"lower {lowered:.3f} s  (driver runs {[round(r) for r, _ in runs]})",
                flush=True,
            )
    changes = results.table(
        "P4Runtime updates (half of a rule set replaced)",
        ["target", "batch", "driver updates/s", "updates"],
        note=f"Driver.apply from {N // 2} pushed classifier entries to the set with {N // 4} of them replaced "
        f"(deletes and inserts, make-before-break order, kept entries keep their priorities), median of {TRIALS}, "
        "each in a fresh switch: the diff against the state the driver holds, not a fresh table",
    )
    for name, start in TARGETS.items():
        b = max(BATCHES)
        runs = [update_rate(start, b) for _ in range(TRIALS)]
        rate = statistics.median(r for r, _ in runs)
        changes.rows.append([name, b, round(rate), runs[0][1]])
        print(
            f"{name:20} update batch {b}: driver {rate:8.0f} updates/s ({runs[0][1]} updates; runs "
            f"{[round(r) for r, _ in runs]})",
            flush=True,
        )
    fwd = results.table(
        "Forwarding",
        ["target", "mode", "offered pps", "forwarded pps"],
        note=f"{PACKETS} frames of {len(test_frame())} B (VXLAN-GTP, one classifier hit) after "
        f"{WARMUP} untimed; live veth: closed loop, at most {WINDOW} frames inside the switch, native "
        "batched sender and counter (sendmmsg / PACKET_MMAP ring) so that the offered rate is not the "
        f"limit; median of {FWD_ROUNDS} rounds, the two targets alternating, each round its own "
        "switch (load average in brackets)",
    )
    pps: dict[str, float] = {}
    if os.geteuid() == 0:
        rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in TARGETS}
        ratios: list[str] = []
        for r in range(FWD_ROUNDS):
            for name, start in TARGETS.items():
                offered, got = live_pps(start)
                rounds[name].append((offered, got))
                print(
                    f"{name:20} live veth, round {r}: offered {offered:8.0f} pps, forwarded {got:8.0f} pps "
                    f"(load {os.getloadavg()[0]:.2f})",
                    flush=True,
                )
            bundled_pps, bmv2_pps = (rounds[name][-1][1] for name in TARGETS)
            ratios.append(f"{bundled_pps / bmv2_pps:.2f} x (load {os.getloadavg()[0]:.1f})")
        for name, measured in rounds.items():
            pps[name] = statistics.median(got for _, got in measured)
            fwd.rows.append([name, "live veth", round(statistics.median(o for o, _ in measured)), round(pps[name])])
        fwd.note += "; per round bundled / BMv2: " + ", ".join(ratios)
        alone = sender_pps()
        fwd.rows.append(["none (sender to counter over one veth pair)", "live veth", None, round(alone)])
        print(f"{'sender alone':20} live veth: {alone:8.0f} pps", flush=True)
    pcap = pcap_pps()
    fwd.rows.append(["bundled target", "pcap replay", None, round(pcap)])
    print(f"{'bundled target':20} pcap replay: {pcap:8.0f} pps", flush=True)
    alone, with_tm = engine_pps()
    fwd.rows.append(["bundled target", "engine in process, no I/O", None, round(alone)])
    fwd.rows.append(["bundled target", "engine + traffic manager in process", None, round(with_tm)])
    print(
        f"{'bundled target':20} engine in process: {alone:8.0f} pps, with the traffic manager {with_tm:8.0f} pps",
        flush=True,
    )

    b = max(BATCHES)
    results.figure(
        "P4Runtime writes through the driver to the bundled target, batched",
        rates["bundled target", b, "driver"],
        "entries/s",
        goal=">= 100000 entries/s (issue #13, #14)",
        met=rates["bundled target", b, "driver"] >= 100_000,
        note=f"median of {TRIALS}; Driver.apply of {N} classifier entries, batches of {b}",
    )
    results.figure(
        "bundled target P4Runtime writes, batched, through the driver",
        rates["bundled target", b, "driver"],
        "entries/s",
        baseline=rates["simple_switch_grpc", b, "driver"],
        baseline_name="simple_switch_grpc, same driver, same run",
        goal=">= 20 x BMv2 (issue #13)",
        met=rates["bundled target", b, "driver"] >= 20 * rates["simple_switch_grpc", b, "driver"],
    )
    results.figure(
        "p4rt driver writes to simple_switch_grpc, batched",
        rates["simple_switch_grpc", b, "driver"],
        "entries/s",
        baseline=rates["simple_switch_grpc", b, "bare"],
        baseline_name="bare P4Runtime client, prebuilt updates, same switch",
        goal=">= 0.8 x bare client",
        met=rates["simple_switch_grpc", b, "driver"] >= 0.8 * rates["simple_switch_grpc", b, "bare"],
    )
    if pps:
        results.figure(
            "bundled target forwarding, live veth",
            pps["bundled target"],
            "packets/s",
            baseline=pps["simple_switch_grpc"],
            baseline_name="simple_switch_grpc, same frames",
            goal=">= 5 x BMv2 (issue #13)",
            met=pps["bundled target"] >= 5 * pps["simple_switch_grpc"],
            note=f"medians of {FWD_ROUNDS} interleaved rounds of {PACKETS} frames; " + fwd.note.split("; ")[-1],
        )
    results.write()
    return 0


if __name__ == "__main__":
    sys.exit(main())
