"""Rate-limit conformance on the NetFPGA model, in simulated time (cycle-accurate).

The recipe of the BESS-UPF line-rate tests (issue #17): per slice, a constant-bit-rate
stream offered at ``factor`` x the slice's limit; at 0.99 x nothing may be lost, at 2 x
half of it (the limit passes, the excess is dropped). Each measurement pushes the slice's
limit through the driver (the real lowering and CSR path), above the limit first empties
its bucket with a back-to-back blast (so the burst allowance does not count as rate),
then injects the
stream with the idle gap that gives the offered rate at the 200 MHz clock and counts what
reaches the DMA port; the driver's ``drops["rate_limit"]`` must account for every packet
that did not. Rates are exact in simulated time, so the accuracy measured is the RTL's.
"""

from __future__ import annotations

import math
import tempfile
from dataclasses import dataclass
from pathlib import Path

from scapy.utils import RawPcapWriter

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes

from . import simulator
from .driver import Driver

BEAT_BYTES = 32
SLICE_ID = 1
PORT = 5002


@dataclass(frozen=True)
class RatePoint:
    rate_bps: float  # configured limit
    factor: float  # offered / limit, as asked
    frame_bytes: int
    offered_bps: float  # as injected (integer idle gaps round the period)
    passed_bps: float  # measured at the DMA port over the stream
    sent: int
    passed: int
    drops: int  # the driver's drops["rate_limit"] for the stream

    @property
    def loss(self) -> float:
        return 1 - self.passed / self.sent

    @property
    def expected_loss(self) -> float:
        return max(0.0, 1 - self.rate_bps / self.offered_bps)

    @property
    def accuracy(self) -> float:
        """Measured / configured rate: meaningful where the limit binds (factor > 1)."""
        return self.passed_bps / self.rate_bps


def _ir(rate_bps: float, burst_ms: float) -> RuleIR:
    entry = SliceEntry(
        slice_id=SLICE_ID,
        ref=1,
        name="limited",
        tenant_vni=7,
        tenant_vlan=None,
        lanes=(0,),
        qos=Qos(rate_bps=int(rate_bps), burst_ms=burst_ms),
    )
    rule = Rule(Match(dst_port=Ternary.exact(PORT, 16)), Action(SLICE_ID, 0, 0))
    return RuleIR(lanes=4, paths=8, rules=(rule,), slices=(entry,), tenants=(TenantEntry(1, "t", 7, None),))


def _frame(size: int) -> bytes:
    data = build_bytes(Flow("10.0.0.1", "10.9.0.1", PORT, encap=Encap.PLAIN))
    return data + bytes(max(0, size - len(data)))


def _pcap(path: Path, frame: bytes, n: int) -> Path:
    w = RawPcapWriter(str(path), linktype=1, sync=False)
    for _ in range(n):
        w.write(frame)
    w.close()
    return path


def measure(
    sim: simulator.SimProcess,
    driver: Driver,
    workdir: Path,
    rate_bps: float,
    factor: float,
    frame_bytes: int,
    packets: int,
    burst_ms: float = 1.0,
) -> RatePoint:
    clock = driver.options.clock_hz
    # A fresh bucket for this point: off (no limit in the plan), then on at the new rate.
    driver.apply(driver.lower(RuleIR(lanes=4, paths=8, rules=())), lambda _: None)
    driver.apply(driver.lower(_ir(rate_bps, burst_ms)), lambda _: None)
    frame = _frame(frame_bytes)
    size = len(frame)
    burst = driver.lower(_ir(rate_bps, burst_ms)).tables["rate_limits"][0]["burst"]
    beats = math.ceil(size / BEAT_BYTES)
    # Read the counters first: a CSR transaction clocks the model, and the bucket would
    # refill meanwhile. Above the limit, empty the bucket with frames back to back (each
    # drains its size less what the rate refills during its beats), and two more, so the
    # burst allowance is not measured as rate. Below it the bucket starts full, as a
    # conforming sender finds it (starting empty, the first frame would precede its tokens).
    before = driver.counters().slices.get(SLICE_ID)
    drops_before = before.drops.get("rate_limit", 0) if before else 0
    net = size - rate_bps / 8 / clock * beats
    if net <= 0:
        raise ValueError(f"{rate_bps} bit/s is at or above the port's line rate for {size}-byte frames")
    blast = math.ceil(burst / net) + 2 if factor > 1 else 0
    dma0 = _stat(sim, "dma")
    if blast:
        sim.command(f"INJECT {_pcap(workdir / 'blast.pcap', frame, blast)} 0")
        sim.command("RUN")
    blast_dropped = blast - (_stat(sim, "dma") - dma0)
    # Period between first beats: the frame's beats plus the idle gap (sp_sim INJECT).
    period = max(beats, round(size * clock * 8 / (factor * rate_bps)))
    dma_before = _stat(sim, "dma")
    sim.command(f"INJECT {_pcap(workdir / 'stream.pcap', frame, packets)} {period - beats}")
    sim.command("RUN", timeout=600)
    passed = _stat(sim, "dma") - dma_before
    drops = driver.counters().slices[SLICE_ID].drops.get("rate_limit", 0) - drops_before - blast_dropped
    if passed + drops != packets:
        raise AssertionError(f"{packets} sent, {passed} passed, {drops} counted as rate-limit drops")
    duration_s = packets * period / clock
    return RatePoint(
        rate_bps=rate_bps,
        factor=factor,
        frame_bytes=size,
        offered_bps=size * 8 * clock / period,
        passed_bps=passed * size * 8 / duration_s,
        sent=packets,
        passed=passed,
        drops=drops,
    )


def _stat(sim: simulator.SimProcess, key: str) -> int:
    fields = dict(f.split("=", 1) for f in sim.command("STATS").split())
    return int(fields[key])


def frame_size_for(rate_bps: float) -> int:
    """Minimum frames below 1 Gbit/s (simulated idle cycles cost wall time like busy ones),
    full-size frames above."""
    return 64 if rate_bps < 1e9 else 1500


def conformance(
    points: list[tuple[float, float]], packets: int, binary: Path = simulator.DEFAULT_BINARY
) -> list[RatePoint]:
    """Measure every (rate_bps, factor) on one model process, in order."""
    with tempfile.TemporaryDirectory(prefix="sp-rate-") as tmp:
        work = Path(tmp)
        # Ingress and drain far above any limit: only the rate limiter decides.
        sim = simulator.start(work / "s.sock", "--ingress-gbps", "1000", "--drain-gbps", "1000", binary=binary)
        driver = Driver({"address": sim.address})
        try:
            return [measure(sim, driver, work, rate, factor, frame_size_for(rate), packets) for rate, factor in points]
        finally:
            driver.close()
            sim.stop()
