"""Per-slice rate limits on the NetFPGA driver: lowering to the RTL's token buckets,
make-before-break push, rollback of the buckets with the table, read-back, and the drops
the RTL counts reported as ``drops["rate_limit"]`` per slice -- on the Verilator model."""

from __future__ import annotations

from pathlib import Path

import pytest
from scapy.utils import wrpcap

from sliceportal.drivers.contract import CapacityError, DriverError
from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.traffic.packets import Encap, Flow, build
from sliceportal_netfpga import regmap
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.ratelimit import MIN_BURST_BYTES, rate_word_bps
from sliceportal_netfpga.simulator import SimProcess

from .conftest import push_cut_after

CLOCK_HZ = 200_000_000


def limited_ir(rates_bps: dict[int, int | None], burst_ms: float | None = None) -> RuleIR:
    """Slice s (1-based) owns dst port 5000 + 2 s; ``rates_bps[s]`` is its limit (None: none)."""
    slices = tuple(
        SliceEntry(
            slice_id=s,
            ref=100 + s,
            name=f"s{s}",
            tenant_vni=7,
            tenant_vlan=None,
            lanes=(0,),
            qos=Qos(rate_bps=r, burst_ms=burst_ms),
        )
        for s, r in sorted(rates_bps.items())
    )
    rules = tuple(Rule(Match(dst_port=Ternary.exact(5000 + 2 * s, 16)), Action(s, 0, s % 8)) for s in rates_bps)
    return RuleIR(
        lanes=4, paths=8, rules=rules, slices=slices, tenants=(TenantEntry(ref=1, name="t", vni=7, vlan=None),)
    )


def test_lowering_seed004_rates(tmp_path: Path) -> None:
    d = Driver({"address": str(tmp_path / "absent.sock")})
    plan = d.lower(limited_ir({1: 48_000_000, 2: 12_000_000, 3: 240_000_000, 4: None}, burst_ms=5))
    buckets = {b["slice_id"]: b for b in plan.tables["rate_limits"]}
    assert set(buckets) == {1, 2, 3}  # slice 4 has no limit: no bucket
    for s, rate in ((1, 48e6), (2, 12e6), (3, 240e6)):
        assert abs(rate_word_bps(buckets[s]["rate"], CLOCK_HZ) / rate - 1) < 1e-4  # 2^-24 B/cycle steps
    assert buckets[3]["burst"] == 240_000_000 // 8 * 5 // 1000  # 5 ms of the rate
    assert buckets[2]["burst"] == 7500  # 12 Mbit/s * 5 ms
    # 12 Mbit/s * 1 ms = 1500 B would refuse every full-size frame: two frames at least.
    shallow = d.lower(limited_ir({2: 12_000_000}, burst_ms=1)).tables["rate_limits"]
    assert shallow[0]["burst"] == MIN_BURST_BYTES
    assert d.capabilities().rate_limit and not d.capabilities().ecn


def test_lowering_refuses_what_the_limiter_cannot_hold(tmp_path: Path) -> None:
    d = Driver({"address": str(tmp_path / "absent.sock"), "rate_slices": 4})
    with pytest.raises(CapacityError) as e:
        d.lower(limited_ir({1: 10**6, 4: 10**6}))
    assert (e.value.table, e.value.available) == ("rate_limits", 4)
    d.lower(limited_ir({1: 10**6, 4: None}))  # an unlimited slice needs no bucket
    with pytest.raises(DriverError, match="rate limit 10 bit/s"):
        d.lower(limited_ir({1: 10}))
    with pytest.raises(DriverError, match="rate limit"):
        d.lower(limited_ir({1: 10**12}))


def test_push_reads_back_and_removes_unused_buckets(sim: SimProcess) -> None:
    d = Driver({"address": sim.address})
    try:
        first = d.lower(limited_ir({1: 48_000_000, 2: 12_000_000, 3: None}))
        d.apply(first, lambda _: None)
        assert d.read_state().tables == first.tables
        assert int(sim.command(f"R {regmap.rate_reg(1, 'enable')}")) == 1
        assert int(sim.command(f"R {regmap.rate_reg(3, 'enable')}")) == 0
        # Slice 2 loses its limit, slice 3 gains one, slice 1 keeps its bucket untouched.
        second = d.lower(limited_ir({1: 48_000_000, 2: None, 3: 240_000_000}))
        d.apply(second, lambda _: None)
        assert d.read_state().tables == second.tables
        assert int(sim.command(f"R {regmap.rate_reg(2, 'enable')}")) == 0
        d.apply(d.lower(limited_ir({1: None})), lambda _: None)
        assert d.read_state().tables["rate_limits"] == []
    finally:
        d.close()


@pytest.mark.parametrize("fail_after", [0, 3, 7, 20])
def test_failed_push_restores_the_previous_buckets(sim: SimProcess, fail_after: int) -> None:
    """A connection lost after some bucket writes (and before the flip) leaves both the
    table and the buckets as they were."""
    d = Driver({"address": sim.address})
    try:
        old, new = limited_ir({1: 48_000_000, 2: 12_000_000}), limited_ir({1: 96_000_000, 2: None, 3: 240_000_000})
        plan = push_cut_after(d, sim, old, new, fail_after)
        assert d.read_state().tables == plan.tables
    finally:
        d.close()


def test_drops_are_counted_per_slice(sim: SimProcess, tmp_path: Path) -> None:
    """Slice 1 limited to 1 Mbit/s with the minimum bucket, slice 2 unlimited: 40 frames of
    each back to back (microseconds of simulated time, so the bucket barely refills)."""
    d = Driver({"address": sim.address})
    try:
        d.apply(d.lower(limited_ir({1: 1_000_000, 2: None}, burst_ms=1)), lambda _: None)
        frames = []
        for _ in range(40):
            for s in (1, 2):
                frames.append(build(Flow(f"10.0.0.{s}", "10.9.0.1", 5000 + 2 * s, encap=Encap.PLAIN), b"r" * 400))
        size = len(frames[0])
        wrpcap(str(tmp_path / "in.pcap"), frames)
        sim.command(f"INJECT {tmp_path / 'in.pcap'}")
        reply = sim.command("RUN").split()
        passed = int(reply[1])
        c = d.counters()
        drops = c.slices[1].drops["rate_limit"]
        # The bucket starts full (MIN_BURST_BYTES) and refills ~0 in the few thousand cycles.
        assert MIN_BURST_BYTES // size <= 40 - drops <= MIN_BURST_BYTES // size + 1
        assert passed == 80 - drops
        assert c.slices[2].drops == {}
        assert c.slices[1].packets == 40  # the classifier counts what it steered
        # Monotonic: a slice no entry steers any more keeps its drops visible.
        d.apply(d.lower(limited_ir({2: None})), lambda _: None)
        assert d.counters().slices[1].drops["rate_limit"] == drops
    finally:
        d.close()
