"""Intents ``drop`` and ``rate_limit`` on the three data planes, with traffic (issue #14 item 1).

The slice of ``test_intents_planes`` (100 UEs, Flexible Slice, video 5000-5007 in lane 0,
voice 5024-5031 in lane 6) with two intents: DROP one UE's video flow, RATE-LIMIT another
UE (all its flows). The compiler gives each intent a sub-slice with a policer of its own
(docs/rules.md, "Per-flow rate limit and drop"): rate 0 for the drop, the intent's rate
for the limit. Each plane runs through its own driver:

* drop: every frame of every UE goes through XDP in the kernel (BPF_PROG_TEST_RUN), the
  NetFPGA RTL (Verilator ``sp_sim``) and the P4 program (bundled engine running p4c's
  JSON, pushed over P4Runtime): exactly the named UE's video frames are dropped, and the
  plane counts them on the intent's sub-slice; every other frame is forwarded;
* rate_limit: the limited UE and a neighbour offer far more than the limit, interleaved;
  what the limited UE gets through is its rate (plus the bucket it starts with) and the
  neighbour loses nothing -- in the kernel in wall-clock time (as
  ``drivers/xdp/tests/test_rate_limit.py``), on the RTL in simulated cycles and on the P4
  engine in the timestamps we give it, so those two are exact.

Real BMv2 (``simple_switch_grpc``) and the bundled engine drop and count a drop intent's
sub-slice alike in both policer modes: ``test_intent_drop_sub_slice`` in
``drivers/p4rt/tests/test_differential_bmv2.py``.
"""

from __future__ import annotations

import csv
import dataclasses
import sys
import threading
import time
from pathlib import Path

import pytest
from scapy.utils import RawPcapReader, RawPcapWriter

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent / "bmv2"):  # --import-mode=importlib: our helpers by path
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import planes  # noqa: E402
from test_intents_planes import BASE, PORTS, SLICE, TARGETS, TENANT, UES, VNI, ip  # noqa: E402

from sliceportal.rules.compiler import compile_rules  # noqa: E402
from sliceportal.rules.ir import Qos, RuleIR  # noqa: E402
from sliceportal.rules.spec import IntentSpec  # noqa: E402
from sliceportal.traffic.packets import Flow, build_bytes  # noqa: E402

DROPPED = 42  # the UE whose video flow the drop intent names
LIMITED = 17  # the UE the rate_limit intent names (all its flows)
NEIGHBOUR = 18  # a UE of the same slice next to it, offering the same load
DROP = IntentSpec(ref=7, ue=((BASE + DROPPED, 32),), action="drop", dst_ports=((5000, 5007),))


def limit(rate_bps: int) -> IntentSpec:
    return IntentSpec(ref=8, ue=((BASE + LIMITED, 32),), action="rate_limit", rate_bps=rate_bps)


def compiled(plane: str, *intents: IntentSpec, burst_ms: float | None = None) -> RuleIR:
    spec = dataclasses.replace(SLICE, intents=intents, qos=Qos(burst_ms=burst_ms))
    return compile_rules([TENANT], [spec], TARGETS[plane]).ir


def sub_slice(ir: RuleIR, intent: IntentSpec) -> int:
    (s,) = [s for s in ir.slices if s.intent_ref == intent.ref]
    return s.slice_id


FLOWS = [
    Flow(src_ip=ip(BASE + u), dst_ip="10.100.0.1", dst_port=port, vni=VNI, teid=0x1000 + u)
    for u in range(UES)
    for port in PORTS
]
FRAMES = [build_bytes(f, b"intent") for f in FLOWS]


def dropped_expected() -> list[bool]:
    return [f.src_ip == ip(BASE + DROPPED) and f.dst_port == PORTS[0] for f in FLOWS]


def test_the_intents_get_sub_slices_of_their_own() -> None:
    for plane in TARGETS:
        ir = compiled(plane, DROP, limit(10_000_000))
        assert [(s.slice_id, s.intent_ref, s.qos.rate_bps) for s in ir.slices] == [
            (1, None, None),
            (2, 7, 0),
            (3, 8, 10_000_000),
        ], plane
        want = [
            2 if d else 3 if f.src_ip == ip(BASE + LIMITED) else 1
            for f, d in zip(FLOWS, dropped_expected(), strict=True)
        ]
        assert [ir.classify(f.key()).slice_id for f in FLOWS] == want, plane
    assert sum(dropped_expected()) == 1  # the test can fail: one frame must go


# ---- drop -------------------------------------------------------------------------------


@pytest.mark.needs_root
def test_xdp_drops_only_the_intent_s_frames_and_counts_them() -> None:
    ir = compiled("xdp", DROP)
    with planes.xdp_plane(ir, TARGETS["xdp"].lanes) as d:
        verdicts = planes.run_xdp(d, FRAMES)
        assert [v is not None and not v.forwarded for v in verdicts] == dropped_expected()
        c = d.counters()
        assert c.slices[sub_slice(ir, DROP)].drops == {"rate_limit": 1}
        assert c.slices[1].drops == {} and c.slices[1].packets == len(FRAMES) - 1
        (rule,) = [i for i, r in enumerate(ir.rules) if r.action.slice_id == sub_slice(ir, DROP)]
        assert c.rules[rule].drops == {"rate_limit": 1}  # per rule: what the intent dropped
        # delete the intent: the rule set without it forwards everything again
        d.apply(d.lower(compiled("xdp")), lambda _: None)
        assert all(v is not None and v.forwarded for v in planes.run_xdp(d, FRAMES))


def _netfpga_run(plane: planes.NetfpgaPlane, frames: list[bytes], gap: int) -> tuple[list[bytes], list[int]]:
    """Inject ``frames`` ``gap`` idle cycles apart; the frames that came out and their out cycles."""
    pin, pout = plane.workdir / "in.pcap", plane.workdir / "out.pcap"
    with RawPcapWriter(str(pin), linktype=1) as w:
        for data in frames:
            w.write(data)
    plane.sim.command(f"CAPTURE {pout}")
    plane.sim.command(f"INJECT {pin} {gap}")
    plane.sim.command("RUN", timeout=600)
    with open(f"{pout}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with RawPcapReader(str(pout)) as reader:
        outs = [bytes(f) for f, _ in reader]
    return outs, [int(r["in_cycle"]) for r in rows]


def test_netfpga_rtl_drops_only_the_intent_s_frames_and_counts_them(tmp_path: Path) -> None:
    from sliceportal_netfpga.driver import Driver as NetfpgaDriver

    ir = compiled("netfpga", DROP)
    with planes.netfpga_plane(ir, tmp_path) as plane:
        outs, _ = _netfpga_run(plane, FRAMES, 400)
        assert sorted(outs) == sorted(f for f, d in zip(FRAMES, dropped_expected(), strict=True) if not d)
        d = NetfpgaDriver({"address": str(tmp_path / "sp_sim.sock")})
        try:
            c = d.counters()
        finally:
            d.close()
        assert c.slices[sub_slice(ir, DROP)].drops == {"rate_limit": 1}
        assert c.slices[1].drops == {}


def _p4_counter(switch: planes.Switch, name: str) -> list[tuple[int, int]]:
    pipe = switch.pipeline
    assert pipe is not None
    return list(pipe.counter_cells(pipe.counter_index(name)))


def test_p4_drops_only_the_intent_s_frames_and_counts_them() -> None:
    ir = compiled("p4", DROP)
    with planes.p4_plane(ir, TARGETS["p4"].lanes) as switch:
        pipe = switch.pipeline
        assert pipe is not None
        went = [pipe.ingress(data, planes.P4_IN, 10 * i) is not None for i, data in enumerate(FRAMES)]
        assert [not w for w in went] == dropped_expected()
        drops = _p4_counter(switch, "SlicingIngress.vqueue.slice_drops")
        assert drops[sub_slice(ir, DROP)][0] == 1 and sum(p for p, _ in drops) == 1


# ---- rate_limit ---------------------------------------------------------------------------

PAYLOAD = bytes(1000)


def _pair() -> tuple[bytes, bytes]:
    """One frame of the limited UE and one of its neighbour, same size, same service."""
    return tuple(
        build_bytes(
            Flow(src_ip=ip(BASE + u), dst_ip="10.100.0.1", dst_port=PORTS[0], vni=VNI, teid=0x1000 + u), PAYLOAD
        )
        for u in (LIMITED, NEIGHBOUR)
    )  # type: ignore[return-value]


@pytest.mark.needs_root
def test_xdp_limits_the_intent_s_ue_and_no_other() -> None:
    """Wall-clock: two threads blast both UEs for 3 s through BPF_PROG_TEST_RUN (a 300 ms
    bucket rides over the kernel's dispatcher pauses, as drivers/xdp/tests/test_rate_limit.py
    explains); the UE's passed bytes less the bucket over the time is its rate within 10 %."""
    rate = 20_000_000
    ir = compiled("xdp", limit(rate), burst_ms=300)
    sid = sub_slice(ir, limit(rate))
    mine, theirs = _pair()
    with planes.xdp_plane(ir, TARGETS["xdp"].lanes) as d:
        time.sleep(0.4)  # the bucket fills: measure from a known (full) state
        before = d.raw_counters().slices
        stop = threading.Event()

        def blast() -> None:
            while not stop.is_set():
                d.run(mine, repeat=20_000)
                d.run(theirs, repeat=20_000)

        threads = [threading.Thread(target=blast) for _ in range(2)]
        t0 = time.monotonic()
        for t in threads:
            t.start()
        time.sleep(3.0)
        stop.set()
        for t in threads:
            t.join()
        elapsed = time.monotonic() - t0
        after = d.raw_counters().slices
    got = after[sid]
    offered = got.packets - (before[sid].packets if sid in before else 0)
    dropped = got.drop_rate - (before[sid].drop_rate if sid in before else 0)
    assert dropped > offered / 2, "the offered load must exceed the limit for the test to mean anything"
    burst = rate // 8 * 300 // 1000
    measured = ((offered - dropped) * len(mine) - burst) * 8 / elapsed
    assert abs(measured - rate) / rate < 0.10, (measured, rate, offered, dropped)
    neighbour = after[1].packets - (before[1].packets if 1 in before else 0)
    assert neighbour > offered / 2 and after[1].drop_rate == (before[1].drop_rate if 1 in before else 0)


NETFPGA_HZ = 200_000_000  # the driver's default clock_hz: the RTL's rate is in bytes per cycle


def test_netfpga_rtl_limits_the_intent_s_ue_and_no_other(tmp_path: Path) -> None:
    """Simulated cycles: both UEs alternate, 400 idle cycles apart (about 1.8 Gbit/s each);
    the limited UE's bytes out over the run are its rate times the run plus the 1 ms bucket
    it starts with (within a frame and 1 %), the neighbour's are all of its frames."""
    rate = 400_000_000
    ir = compiled("netfpga", limit(rate), burst_ms=1)
    mine, theirs = _pair()
    frames = [mine, theirs] * 1500
    with planes.netfpga_plane(ir, tmp_path) as plane:
        outs, cycles = _netfpga_run(plane, frames, 400)
    run_s = (max(cycles) - min(cycles)) / NETFPGA_HZ
    got = sum(len(f) for f in outs if f == mine)
    assert outs.count(theirs) == 1500  # the neighbour loses nothing
    burst = rate // 8 // 1000
    want = rate / 8 * run_s + burst
    assert got < 1500 * len(mine) / 2, "the offered load must exceed the limit for the test to mean anything"
    assert abs(got - want) <= len(mine) + 0.01 * want, (got, want, run_s)


def test_p4_limits_the_intent_s_ue_and_no_other() -> None:
    """Engine timestamps: both UEs alternate every 10 us (about 0.8 Gbit/s each) for 1 s of
    switch time; the vQueue drains at the rate and drops above its 10 ms burst limit, so the
    limited UE gets its rate times the time plus one burst (within a frame and 1 %)."""
    rate = 50_000_000
    ir = compiled("p4", limit(rate))
    mine, theirs = _pair()
    n, step_us = 50_000, 10
    with planes.p4_plane(ir, TARGETS["p4"].lanes) as switch:
        pipe = switch.pipeline
        assert pipe is not None
        passed = {mine: 0, theirs: 0}
        for i in range(n):
            data = mine if i % 2 == 0 else theirs
            if pipe.ingress(data, planes.P4_IN, 1_000_000 + i * step_us) is not None:
                passed[data] += 1
    run_s = n * step_us / 1e6
    assert passed[theirs] == n // 2
    got = passed[mine] * len(mine)
    want = rate / 8 * (run_s + 0.010)
    assert got < n // 2 * len(mine) / 2, "the offered load must exceed the limit for the test to mean anything"
    assert abs(got - want) <= len(mine) + 0.01 * want, (got, want)
