"""The plugin as the portal sees it: entry point, protocol, capabilities, pure lowering,
and overload detection from /proc samples."""

from __future__ import annotations

from importlib.metadata import entry_points

import pytest

from sliceportal.drivers.contract import Driver as DriverProtocol
from sliceportal.drivers.contract import GeometryError, UnsupportedMatchError
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal_xdp import overload
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.lowering import first_rule


def test_registered_under_the_entry_point_group() -> None:
    eps = {ep.name: ep for ep in entry_points(group="sliceportal.drivers")}
    assert eps["xdp"].load() is Driver
    d = Driver({})
    assert isinstance(d, DriverProtocol)
    assert Driver.name == "xdp"


def test_capabilities_follow_the_options() -> None:
    caps = Driver({"lanes": 8, "paths": 4, "capacity": {"teid": 100}}).capabilities()
    assert (caps.lanes, caps.paths, caps.capacity["teid"], caps.capacity["rules"]) == (8, 4, 100, 1024)
    assert caps.rate_limit and caps.ecn
    assert caps.match_fields == {"src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan"}


def test_lower_is_pure_and_checks_geometry() -> None:
    d = Driver({"lanes": 4, "paths": 8})
    with pytest.raises(GeometryError):
        d.lower(RuleIR(lanes=8, paths=8, rules=()))
    ir = RuleIR(lanes=4, paths=8, rules=(Rule(Match(dst_port=Ternary(5000, 0xFFFE)), Action(1, 1, 1)),))
    plan = d.lower(ir)
    assert plan.version == ir.digest() and plan.usage["rules"].used == 1
    ports = {e["first"]: e for e in plan.tables["dst_port"] if e["rules"]}
    assert ports[5000]["last"] == 5001  # a value/mask pair is a range here
    assert d.lower(ir) == plan


def test_tunnel_masks_that_explode_are_refused() -> None:
    ir = RuleIR(lanes=4, paths=8, rules=(Rule(Match(teid=Ternary(0, 0xFFFF0000)), Action(1, 1, 1)),))
    with pytest.raises(UnsupportedMatchError):
        Driver({}).lower(ir)


def test_empty_ir_misses_everything() -> None:
    plan = Driver({}).lower(RuleIR(lanes=4, paths=8, rules=()))
    from sliceportal.rules.ir import FlowKey

    assert first_rule(plan.tables, FlowKey(1, 2, 3, 4)) is None


STAT_T0 = """cpu  100 0 100 800 0 0 0 0 0 0
cpu0 50 0 50 400 0 0 0 0 0 0
cpu1 50 0 50 400 0 0 0 0 0 0
"""
STAT_T1 = """cpu  300 0 110 990 0 0 0 0 0 0
cpu0 240 0 55 405 0 0 0 0 0 0
cpu1 60 0 55 585 0 0 0 0 0 0
"""


def softnet(rows: list[tuple[int, int]]) -> str:
    """/proc/net/softnet_stat as kernel 6.x writes it: 15 hex columns, CPU id in the 13th."""
    return "".join(
        f"00000010 {dropped:08x} {squeezed:08x} " + "00000000 " * 9 + f"{cpu:08x} 00000000 00000000\n"
        for cpu, (dropped, squeezed) in enumerate(rows)
    )


SOFTNET_T0 = softnet([(0, 0), (0, 0)])
SOFTNET_T1 = softnet([(0, 0), (3, 0)])


def test_overload_from_cpu_busy_and_softnet_drops() -> None:
    t0 = overload.sample(STAT_T0, SOFTNET_T0)
    t1 = overload.sample(STAT_T1, SOFTNET_T1)
    # cpu0: 195 busy of 200 jiffies; cpu1: 15 of 200 busy but its backlog dropped 3
    assert overload.overloaded(t0, t1, busy=0.9) == {0, 1}
    assert overload.overloaded(t0, t0, busy=0.9) == set()
    t1_quiet = overload.sample(STAT_T1, SOFTNET_T0)
    assert overload.overloaded(t0, t1_quiet, busy=0.9) == {0}


def test_real_proc_files_parse() -> None:
    s = overload.read_sample()
    assert s and all(v.total >= v.busy >= 0 for v in s.values())


def test_cpumap_drops_alone_mark_a_cpu() -> None:
    t0 = overload.sample(STAT_T0, SOFTNET_T0)
    quiet = overload.sample(STAT_T0, SOFTNET_T0)  # no time passed: no busy share, no softnet drops
    assert overload.overloaded(t0, quiet, 0.9, {1: 5}, {1: 5}) == set()
    assert overload.overloaded(t0, quiet, 0.9, {1: 5}, {1: 9, 0: 0}) == {1}
    assert overload.overloaded(t0, quiet, 0.9, None, {0: 1}) == {0}
