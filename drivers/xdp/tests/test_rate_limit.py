"""Per-slice token buckets hold the configured rate within ±5 %.

Packets are fed through BPF_PROG_TEST_RUN far faster than the limit (millions per
second) from two threads at once, so two CPUs share each bucket; the bytes the slice
let through, less the bucket depth it started with, over the measured wall time is the
rate, and must be within 5 % of the configured one, and never above it.

The bucket is 300 ms deep here because each BPF_PROG_TEST_RUN call with repeat > 1
pauses for ~25 ms while the kernel swaps its XDP dispatcher, and a loaded 2-core machine
adds scheduling gaps; a shallower bucket would overflow during those pauses (correct
token-bucket behaviour, but then the harness, not the limiter, would decide the figure)."""

from __future__ import annotations

import threading
import time

import pytest

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, Ternary
from sliceportal.traffic.packets import Flow, build_bytes
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.lowering import qos_entries

from .conftest import noop

pytestmark = pytest.mark.needs_root

DURATION_S = 3.0
BURST_MS = 300


def limited(rate_bps: int, burst_ms: float) -> RuleIR:
    return RuleIR(
        lanes=4,
        paths=8,
        rules=(Rule(Match(teid=Ternary.exact(5, 32)), Action(1, 1, 0)),),
        slices=(SliceEntry(1, 1, "limited", 1, None, (1,), Qos(rate_bps=rate_bps, burst_ms=burst_ms)),),
    )


@pytest.mark.parametrize("rate_bps", [20_000_000, 1_000_000_000])
def test_rate_limit_within_five_percent(driver: Driver, rate_bps: int) -> None:
    ir = limited(rate_bps, burst_ms=BURST_MS)
    driver.apply(driver.lower(ir), noop)
    burst = qos_entries(ir)[0]["burst_bytes"]
    pkt = build_bytes(Flow("10.1.0.1", "10.2.0.1", 5000, teid=5), bytes(1000))
    # let the bucket fill, then measure from a known (full) state
    time.sleep(BURST_MS / 1000 + 0.1)
    before = driver.raw_counters().slices.get(1)
    stop = threading.Event()

    def blast() -> None:
        while not stop.is_set():
            driver.run(pkt, repeat=100_000)

    threads = [threading.Thread(target=blast) for _ in range(2)]
    t0 = time.monotonic()
    for t in threads:
        t.start()
    time.sleep(DURATION_S)
    stop.set()
    for t in threads:
        t.join()
    elapsed = time.monotonic() - t0
    after = driver.raw_counters().slices[1]
    offered = after.packets - (before.packets if before else 0)
    dropped = after.drop_rate - (before.drop_rate if before else 0)
    passed_bytes = (offered - dropped) * len(pkt)
    assert dropped > offered / 2, "the offered load must exceed the limit for the test to mean anything"
    measured_bps = (passed_bytes - burst) * 8 / elapsed
    assert abs(measured_bps - rate_bps) / rate_bps < 0.05, (measured_bps, rate_bps, offered, dropped)
    # A token bucket's hard bound: never more than its depth plus the rate over the time
    # (elapsed includes the threads' start and join, so the true window is shorter). Two
    # CPUs racing for the bucket once broke it by 1-8 % (a refill step that moved its
    # clock back); 0.5 % is for the byte rate's rounding.
    assert measured_bps <= rate_bps * 1.005, (measured_bps, rate_bps, offered, dropped)


def test_unlimited_slices_drop_nothing(driver: Driver) -> None:
    ir = limited(20_000_000, 5)
    ir = RuleIR(lanes=4, paths=8, rules=ir.rules, slices=(SliceEntry(1, 1, "free", 1, None, (1,)),))
    driver.apply(driver.lower(ir), noop)
    before = driver.raw_counters().slices.get(1)
    driver.run(build_bytes(Flow("10.1.0.1", "10.2.0.1", 5000, teid=5), bytes(1000)), repeat=100_000)
    after = driver.raw_counters().slices[1]
    assert after.drop_rate == (before.drop_rate if before else 0)


# ---- conformance with a sender the kernel paces (bench/rate_conformance.py's recipe) ----

SEED004 = {"DC": (48e6, 20.0), "Enterprise": (12e6, 10.0), "Peering": (240e6, 30.0)}  # rate, burst ms


def test_conformance_at_seed004_rates_with_a_kernel_paced_sender() -> None:
    """Per seed 004 slice: offered 0.99 x the limit through tbf -> 0 loss; offered 2 x ->
    the limit passes within +-5 % and the loss is what the offered factor leaves (50 %
    at exactly 2 x) within 1 point. The factor is measured by the program's own
    counters; a loaded machine may offer a little less than asked, never a limiter's
    business, so the loss is held to 1 - 1/factor, and the factor must be near 2."""
    from sliceportal_xdp.rate_experiment import measure

    cases = [(rate, burst, f) for rate, burst in SEED004.values() for f in (0.99, 2.0)]
    points = measure(cases, window_s=2.0, warmup_s=0.5)
    report = [(p.rate_bps / 1e6, p.factor, round(p.offered_bps / p.rate_bps, 4), round(p.loss, 4)) for p in points]
    for p in points:
        offered_x = p.offered_bps / p.rate_bps
        if p.factor < 1:
            assert offered_x > 0.9, report  # the sender delivered what was asked
            assert p.dropped == 0, report
        else:
            assert offered_x > 1.8, report
            assert abs(p.passed_bps / p.rate_bps - 1) < 0.05, report
            assert abs(p.loss - (1 - 1 / offered_x)) < 0.01, report
