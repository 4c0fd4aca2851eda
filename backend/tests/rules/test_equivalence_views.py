"""Each driver's ternary view of its own plan (drivers/*/view.py) proven equal to the IR
for random configurations and random raw rule sets, and a broken plan of each driver found
with a key on which the driver's own plan really decides otherwise."""

from __future__ import annotations

import copy
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sliceportal.drivers.contract import NativePlan, TernaryViewer, ternary_view_of
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.equivalence import EquivalenceResult, EquivalenceVerdict, check
from sliceportal.rules.ir import FIELD_WIDTHS, Action, FlowKey, Match, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.rules.scenarios import TABLE3_SLICES, table3_config
from sliceportal.rules.spec import SliceSpec, TargetSpec, TenantSpec
from sliceportal_netfpga.driver import Driver as NetfpgaDriver
from sliceportal_netfpga.tcam import TcamEntry
from sliceportal_p4rt.driver import Driver as P4rtDriver
from sliceportal_p4rt.p4info import CLASSIFIER
from sliceportal_xdp.driver import Driver as XdpDriver
from sliceportal_xdp.lowering import first_rule
from tests.rules.test_equivalence_random import configs

DRIVERS = ("netfpga", "p4rt", "xdp")


def make_driver(name: str, tmp: Path) -> Any:
    if name == "netfpga":
        return NetfpgaDriver({"address": str(tmp / "netfpga.sock"), "capacity": 1024})
    if name == "p4rt":  # trunks: every tenant with a VLAN reaches the classifier
        return P4rtDriver({"lanes": 8, "trunk_ports": [1, 2], "uplink_port": 2})
    return XdpDriver({})


def target_of(driver: Any) -> TargetSpec:
    caps = driver.capabilities()
    return TargetSpec(
        lanes=caps.lanes, paths=caps.paths, match_fields=frozenset(caps.match_fields) & FIELD_WIDTHS.keys()
    )


def prove(driver: Any, ir: RuleIR, plan: NativePlan | None = None) -> EquivalenceResult:
    return check(ir, ternary_view_of(driver, plan or driver.lower(ir)), max_cubes=5_000_000, max_seconds=120)


def test_every_bundled_driver_offers_a_view(tmp_path: Path) -> None:
    for name in DRIVERS:
        assert isinstance(make_driver(name, tmp_path), TernaryViewer), name


@pytest.mark.parametrize("driver_name", DRIVERS)
@pytest.mark.parametrize("n_slices", TABLE3_SLICES)
def test_table3_plans_are_proven(driver_name: str, n_slices: int, tmp_path: Path) -> None:
    d = make_driver(driver_name, tmp_path)
    tenants, slices = table3_config(n_slices)
    tenants = tuple(TenantSpec(ref=t.ref, name=t.name, vni=t.vni, vlan=100) for t in tenants)
    ir = compile_rules(tenants, slices, target_of(d)).ir
    r = prove(d, ir)
    assert r.verdict is EquivalenceVerdict.PROVEN, (r.detail, r.counterexample)
    assert r.checked_entries >= len(ir.rules) > 0


@pytest.mark.parametrize("driver_name", DRIVERS)
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(config=configs())
def test_random_configurations_are_proven(
    driver_name: str, tmp_path: Path, config: tuple[list[TenantSpec], list[SliceSpec], TargetSpec]
) -> None:
    tenants, slices, _ = config
    d = make_driver(driver_name, tmp_path)
    ir = compile_rules(tenants, slices, target_of(d)).ir
    r = prove(d, ir)
    assert r.verdict is EquivalenceVerdict.PROVEN, (r.detail, r.counterexample)


# Raw rule sets, not shaped by the compiler: masks with holes, overlaps, shadowed rules.
def ternaries(width: int, lo_bits: int, top_always: bool) -> st.SearchStrategy[Ternary | None]:
    """Values near each other so rules overlap; masks on the low bits (holes allowed),
    the high bits all cared for or (unless ``top_always``) none."""
    top = ((1 << width) - 1) & ~((1 << lo_bits) - 1)
    low = st.integers(0, (1 << lo_bits) - 1)
    return st.one_of(
        st.none(),
        st.builds(
            lambda v, m, hi: Ternary((v & m) | (top if hi else 0), m | (top if hi else 0)),
            low,
            low,
            st.just(True) if top_always else st.booleans(),
        ),
    )


def tunnel_ternaries(width: int) -> st.SearchStrategy[Ternary | None]:
    """What a tunnel id is keyed with: any value (mask 0), or a value with a few low bits
    free (XDP refuses masks with holes there, rightly: they expand into hash entries)."""
    full = (1 << width) - 1
    return st.one_of(
        st.none(),
        st.just(Ternary(0, 0)),
        st.builds(
            lambda v, free: Ternary((100 + v) & full & ~((1 << free) - 1), full & ~((1 << free) - 1)),
            st.integers(0, 7),
            st.integers(0, 3),
        ),
    )


def raw_irs(fields: tuple[str, ...], lpm: bool = False) -> st.SearchStrategy[RuleIR]:
    """``lpm``: holes only below cared high bits, the shape XDP's tables take without
    blowing up (addresses expand into prefixes; a port mask with holes and no high bits is
    16 384 array runs, which the walk would visit one by one)."""
    match = st.fixed_dictionaries(
        {
            f: tunnel_ternaries(FIELD_WIDTHS[f])
            if f in ("vni", "teid", "vlan")
            else ternaries(FIELD_WIDTHS[f], 2, top_always=lpm)
            for f in fields
        }
    )
    rule = st.builds(
        lambda m, s, lane, path: Rule(Match(**m), Action(s, lane, path)),
        match,
        st.integers(1, 2),
        st.integers(0, 3),
        st.integers(0, 7),
    )
    # few rules, holes in the low 2 bits: the partition of the key space stays small enough
    # to walk in a test (holes in every field multiply its regions)
    return st.lists(rule, max_size=6).map(
        lambda rules: RuleIR(
            lanes=4,
            paths=8,
            rules=tuple(rules),
            slices=(SliceEntry(1, 1, "a", 100, 10, (0, 1, 2, 3)), SliceEntry(2, 2, "b", 100, 10, (0, 1, 2, 3))),
            tenants=(TenantEntry(1, "t", 100, 10),),
        )
    )


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(ir=raw_irs(("src_ip", "dst_ip", "dst_port", "dscp")))
def test_raw_rule_sets_are_proven_on_netfpga(tmp_path: Path, ir: RuleIR) -> None:
    r = prove(make_driver("netfpga", tmp_path), ir)
    assert r.verdict is EquivalenceVerdict.PROVEN, (r.detail, r.counterexample)


@settings(max_examples=60, deadline=None)
@given(ir=raw_irs(("src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan"), lpm=True))
def test_raw_rule_sets_are_proven_on_xdp(ir: RuleIR) -> None:
    """The bit-vector tables (LPM tries, port / DSCP arrays, tunnel hashes and their
    present / absent slots) classify exactly as the IR, holes in masks included."""
    r = prove(XdpDriver({}), ir)
    assert r.verdict is EquivalenceVerdict.PROVEN, (r.detail, r.counterexample)


# ---- broken plans: found, with a key the plan's own semantics really decide otherwise -----------


def flow_key(k: dict[str, int]) -> FlowKey:
    def tunnel(f: str) -> int | None:
        return k[f] if k.get(f"has_{f}", 0) else None

    return FlowKey(
        src_ip=k["src_ip"],
        dst_ip=k["dst_ip"],
        dst_port=k["dst_port"],
        dscp=k["dscp"],
        vni=tunnel("vni"),
        teid=tunnel("teid"),
        vlan=tunnel("vlan"),
    )


def tcam_decides(plan: NativePlan, key: FlowKey) -> tuple[int, int, int] | None:
    """First matching TCAM entry (lowest index), as the RTL does; None = miss."""
    for native in plan.tables["tcam"]:
        e = TcamEntry.model_validate(native)
        if all(
            getattr(key, f) & getattr(e.mask, f) == getattr(e.key, f) for f in ("src_ip", "dst_ip", "dst_port", "dscp")
        ):
            return e.action.slice_id, e.action.lane, e.action.rr_path
    return None


def p4_decides(plan: NativePlan, key: FlowKey, tenant_id: int) -> tuple[int, int] | None:
    fields = {
        "tenant_id": tenant_id,
        "src_ip": key.src_ip,
        "dst_ip": key.dst_ip,
        "dst_port": key.dst_port,
        "dscp": key.dscp,
    }
    for f in ("vni", "teid", "vlan"):
        v = getattr(key, f)
        fields[f"has_{f}"], fields[f] = (0, 0) if v is None else (1, v)
    hits = [
        e
        for e in plan.tables[CLASSIFIER]
        if not e.get("default") and all(fields[n] & m == v for n, (v, m) in e["match"].items())
    ]
    if not hits:
        return None
    best = max(hits, key=lambda e: e["priority"])
    return best["params"]["slice_id"], best["params"]["lane"]


def ir_decides(ir: RuleIR, key: FlowKey) -> tuple[int, int, int] | None:
    d = ir.classify(key)
    return None if d.rule_index is None else (d.slice_id, d.lane, d.rr_path)


def table3(d: Any, n: int = 4) -> RuleIR:
    tenants, slices = table3_config(n)
    tenants = tuple(TenantSpec(ref=t.ref, name=t.name, vni=t.vni, vlan=100) for t in tenants)
    return compile_rules(tenants, slices, target_of(d)).ir


def broken(plan: NativePlan, edit: Callable[[dict[str, list[dict[str, Any]]]], None]) -> NativePlan:
    tables = copy.deepcopy(plan.tables)
    edit(tables)
    return plan.model_copy(update={"tables": tables})


def test_a_widened_tcam_entry_is_found(tmp_path: Path) -> None:
    d = make_driver("netfpga", tmp_path)
    ir = table3(d)

    def widen(t: dict[str, list[dict[str, Any]]]) -> None:
        t["tcam"][5]["mask"]["dst_port"] &= ~0x8
        t["tcam"][5]["key"]["dst_port"] &= ~0x8

    plan = broken(d.lower(ir), widen)
    r = prove(d, ir, plan)
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    key = flow_key(r.counterexample.key)
    assert tcam_decides(plan, key) != ir_decides(ir, key)


def test_a_p4_entry_with_another_lane_is_found(tmp_path: Path) -> None:
    d = make_driver("p4rt", tmp_path)
    ir = table3(d)

    def relane(t: dict[str, list[dict[str, Any]]]) -> None:
        hit = next(e for e in t[CLASSIFIER] if not e.get("default"))
        hit["params"]["lane"] ^= 1

    plan = broken(d.lower(ir), relane)
    r = prove(d, ir, plan)
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    k = r.counterexample.key
    key = flow_key(k)
    want = ir_decides(ir, key)
    assert p4_decides(plan, key, k["tenant_id"]) != (None if want is None else want[:2])


def test_a_p4_entry_under_another_tenant_is_found(tmp_path: Path) -> None:
    """Table slicing (seed 002): an entry keyed on the wrong tenant id serves nobody."""
    d = make_driver("p4rt", tmp_path)
    ir = table3(d)

    def retenant(t: dict[str, list[dict[str, Any]]]) -> None:
        hit = next(e for e in t[CLASSIFIER] if not e.get("default"))
        hit["match"]["tenant_id"][0] += 1

    r = prove(d, ir, broken(d.lower(ir), retenant))
    assert r.verdict is EquivalenceVerdict.DIFFERS


@pytest.mark.parametrize("table", ["dst_port", "src_ip", "special"])  # special: tunnel present / absent sets
def test_a_rule_dropped_from_one_xdp_table_entry_is_found(table: str) -> None:
    d = XdpDriver({})
    ir = table3(d)

    def drop(t: dict[str, list[dict[str, Any]]]) -> None:
        e = next(e for e in t[table] if e["rules"])
        e["rules"] = e["rules"][1:]

    plan = broken(d.lower(ir), drop)
    r = prove(d, ir, plan)
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    key = flow_key(r.counterexample.key)
    got = first_rule(plan.tables, key)
    assert got != ir.classify(key).rule_index  # the driver's own model of its maps agrees it is wrong
