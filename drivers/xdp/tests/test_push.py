"""Pushes: read-back equals the plan, all-or-nothing version switch, refusal before any
write, and a push that fails part-way leaving the previous version live."""

from __future__ import annotations

import ipaddress
import threading
import time

import pytest

from sliceportal.drivers.contract import CapacityError, DriverError, NativePlan, ProgressEvent, PushError
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, Ternary
from sliceportal.traffic.packets import Flow, build_bytes
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.positions import rule_positions

from .conftest import noop

pytestmark = pytest.mark.needs_root

A, B, C = (int(ipaddress.IPv4Address(x)) for x in ("10.0.0.1", "10.0.0.2", "10.0.0.3"))
PKT = build_bytes(Flow("10.0.0.1", "10.0.0.2", 5000, teid=1, vni=1))


def ir_v1() -> RuleIR:
    return RuleIR(lanes=4, paths=8, rules=(Rule(Match(src_ip=Ternary.exact(A, 32)), Action(1, 1, 1)),))


def ir_v2() -> RuleIR:
    return RuleIR(
        lanes=4,
        paths=8,
        rules=(
            Rule(Match(src_ip=Ternary.exact(C, 32)), Action(2, 2, 2)),
            Rule(Match(dst_ip=Ternary.exact(B, 32)), Action(3, 3, 3)),
        ),
        slices=(SliceEntry(3, 30, "s3", 1, None, (3,)),),
    )


def decision(d: Driver) -> tuple[int, int, int, int]:
    d.run(PKT)
    x = d.last_decision()
    return x.rule, x.slice_id, x.lane, x.rr_path


def many_prefixes(n: int) -> RuleIR:
    rules = tuple(Rule(Match(src_ip=Ternary.exact(A + 16 * i, 32)), Action(1, 0, 0)) for i in range(n))
    return RuleIR(lanes=4, paths=8, rules=rules)


def test_read_state_returns_what_lower_produced(driver: Driver) -> None:
    for ir in (ir_v1(), ir_v2(), many_prefixes(300)):
        plan = driver.lower(ir)
        events: list[ProgressEvent] = []
        res = driver.apply(plan, events.append)
        state = driver.read_state()
        assert state.version == plan.version == ir.digest() == res.version
        assert state.tables == plan.tables
        assert events[0].phase == "diff" and events[-1].phase == "commit"
        assert driver.health().version == plan.version


def test_a_push_invalidates_cached_decisions(driver: Driver) -> None:
    for _ in range(3):
        driver.apply(driver.lower(ir_v1()), noop)
        assert decision(driver) == (0, 1, 1, 1)
        assert decision(driver) == (0, 1, 1, 1)  # now from the flow cache
        driver.apply(driver.lower(ir_v2()), noop)
        assert decision(driver) == (1, 3, 3, 3)


def test_diff_counts_between_versions(driver: Driver) -> None:
    driver.apply(driver.lower(ir_v1()), noop)
    res = driver.apply(driver.lower(ir_v2()), noop)
    assert res.added > 0 and res.modified > 0
    again = driver.apply(driver.lower(ir_v2()), noop)
    assert (again.added, again.removed, again.modified) == (0, 0, 0)


def test_packets_see_one_version_or_the_other_never_a_mix(driver: Driver) -> None:
    driver.apply(driver.lower(ir_v1()), noop)
    plans = [driver.lower(ir_v1()), driver.lower(ir_v2())]
    # the program's own decision (a rule position): the driver's IR index maps a position by
    # the copy live when it is read, which may already be the next version
    v1, v2 = (rule_positions(p.tables) for p in plans)
    allowed = {(v1[0], 1, 1, 1), (v2[1], 3, 3, 3)}
    seen: set[tuple[int, int, int, int]] = set()
    stop = threading.Event()
    dp = driver.dataplane

    def traffic() -> None:
        while not stop.is_set():
            dp.run(PKT)
            x = dp.last_decision()
            seen.add((x.rule, x.slice_id, x.lane, x.rr_path))

    t = threading.Thread(target=traffic)
    t.start()
    try:
        # at least 10 switches, and on until the classifying thread has met both versions
        # (on a loaded machine it may not get the CPU between the first few)
        deadline = time.monotonic() + 30
        i = 0
        while i < 10 or (seen != allowed and time.monotonic() < deadline):
            driver.apply(plans[i % 2], noop)
            i += 1
            time.sleep(0.002)
    finally:
        stop.set()
        t.join()
    assert seen <= allowed, seen - allowed
    assert seen == allowed  # both versions were live at some point


def test_capacity_is_refused_before_any_write() -> None:
    small = Driver({"record_last": True, "capacity": {"src_ip": 8}, "overload_poll_s": 0})
    try:
        small.apply(small.lower(ir_v1()), noop)
        before = small.read_state()
        with pytest.raises(CapacityError) as e:
            small.lower(many_prefixes(20))
        # 20 prefixes (no /0 entry: the wildcard rules are the src_ip_any set)
        assert e.value.table == "src_ip" and e.value.needed == 20 and e.value.available == 8
        assert small.read_state() == before
        too_many_rules = RuleIR(lanes=4, paths=8, rules=many_prefixes(1025).rules)
        with pytest.raises(CapacityError):
            Driver({}).lower(too_many_rules)
    finally:
        small.close()


def test_a_push_failing_part_way_leaves_the_previous_version_live() -> None:
    # the plan comes from a driver with room for it; the kernel map of this one is
    # smaller, so the kernel refuses an update part-way through the src_ip table
    small = Driver({"record_last": True, "capacity": {"src_ip": 8}, "overload_poll_s": 0})
    try:
        small.apply(small.lower(ir_v2()), noop)
        before = small.read_state()
        live = decision(small)
        plan = Driver({}).lower(many_prefixes(20))
        events: list[ProgressEvent] = []
        with pytest.raises(PushError) as e:
            small.apply(plan, events.append)
        assert e.value.rolled_back
        assert any(ev.phase == "rollback" for ev in events)
        assert small.read_state() == before
        assert decision(small) == live
        # and the data plane still takes a good push afterwards
        small.apply(small.lower(ir_v1()), noop)
        assert small.read_state().tables == small.lower(ir_v1()).tables
    finally:
        small.close()


def test_foreign_or_incomplete_plans_are_refused(driver: Driver) -> None:
    good = driver.lower(ir_v1())
    driver.apply(good, noop)
    before = driver.read_state()
    foreign = NativePlan(driver="p4rt", version="x", tables=good.tables, usage=good.usage)
    partial = NativePlan(driver="xdp", version="x", tables={"actions": []}, usage=good.usage)
    for bad in (foreign, partial):
        with pytest.raises(DriverError):
            driver.apply(bad, noop)
    assert driver.read_state() == before
