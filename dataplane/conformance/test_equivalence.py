"""Rule-set equivalence of the lowered forms and the IR (issue #20 item 4), for the seed
000 Table 3 scenarios; the walker itself checked against brute force on small spaces."""

from __future__ import annotations

import copy
import dataclasses
import sys
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

HERE = Path(__file__).resolve().parent
if str(HERE) not in sys.path:  # --import-mode=importlib: our helpers by path
    sys.path.insert(0, str(HERE))

import equivalence as eq  # noqa: E402

from sliceportal.drivers.contract import NativePlan  # noqa: E402
from sliceportal.rules.compiler import compile_rules  # noqa: E402
from sliceportal.rules.ir import FlowKey, RuleIR  # noqa: E402
from sliceportal.rules.scenarios import NETFPGA_TARGET, TABLE3_SLICES, table3_config  # noqa: E402
from sliceportal_netfpga.driver import Driver as NetfpgaDriver  # noqa: E402
from sliceportal_p4rt.driver import Driver as P4rtDriver  # noqa: E402
from sliceportal_p4rt.p4info import CLASSIFIER  # noqa: E402
from sliceportal_xdp.driver import Driver as XdpDriver  # noqa: E402
from sliceportal_xdp.lowering import first_rule  # noqa: E402

SPACE = eq.ir_space(with_tunnels=False)
TENANT_VID = 100


def table3_ir(n: int, paths: int) -> RuleIR:
    tenants, slices = table3_config(n)
    tenants = tuple(dataclasses.replace(t, vlan=TENANT_VID) for t in tenants)
    return compile_rules(tenants, slices, dataclasses.replace(NETFPGA_TARGET, paths=paths)).ir


def p4_plan(ir: RuleIR) -> NativePlan:
    d = P4rtDriver({"lanes": 4, "access_ports": {1: TENANT_VID}, "trunk_ports": [2], "uplink_port": 2})
    return d.lower(ir)


def with_lanes(s: int, lane: int, path: int) -> tuple[int, int, int]:
    return (s, lane, path)


def without_paths(s: int, lane: int, _path: int) -> tuple[int, int]:
    return (s, lane)


@pytest.mark.parametrize("n_slices", TABLE3_SLICES)
def test_netfpga_tcam_entries_equal_the_ir_on_the_whole_key_space(n_slices: int, tmp_path: Path) -> None:
    ir = table3_ir(n_slices, NETFPGA_TARGET.paths)
    plan = NetfpgaDriver({"address": str(tmp_path / "x.sock")}).lower(ir)
    r = eq.compare(SPACE, eq.from_ir(ir, SPACE, with_lanes), eq.from_tcam(plan, SPACE))
    assert r.equivalent, eq.describe(r, "netfpga")


@pytest.mark.parametrize("n_slices", TABLE3_SLICES)
def test_p4runtime_entries_equal_the_ir_on_the_whole_key_space(n_slices: int) -> None:
    ir = table3_ir(n_slices, 1)
    r = eq.compare(SPACE, eq.from_ir(ir, SPACE, without_paths), eq.from_p4runtime(p4_plan(ir), SPACE, 1, CLASSIFIER))
    assert r.equivalent, eq.describe(r, "p4")


@pytest.mark.parametrize("n_slices", [1, 4, 16])
def test_xdp_lowering_model_agrees_on_every_region(n_slices: int) -> None:
    ir = table3_ir(n_slices, NETFPGA_TARGET.paths)
    plan = XdpDriver({}).lower(ir)
    r = eq.sample_xdp(ir, lambda k: first_rule(plan.tables, k))
    assert r.equivalent, eq.describe(r, "xdp")


def test_a_changed_entry_is_found_with_a_key_that_shows_it(tmp_path: Path) -> None:
    ir = table3_ir(4, NETFPGA_TARGET.paths)
    plan = NetfpgaDriver({"address": str(tmp_path / "x.sock")}).lower(ir)
    bad = copy.deepcopy(plan.tables)
    (entries,) = bad.values()
    entries[5]["mask"]["dst_port"] &= ~0x8  # one port range too wide
    r = eq.compare(
        SPACE, eq.from_ir(ir, SPACE, with_lanes), eq.from_tcam(plan.model_copy(update={"tables": bad}), SPACE)
    )
    assert not r.equivalent and r.counterexample is not None and r.decisions is not None
    k = r.counterexample
    d = ir.classify(FlowKey(src_ip=k["src_ip"], dst_ip=k["dst_ip"], dst_port=k["dst_port"], dscp=k["dscp"]))
    want = (d.slice_id, d.lane, d.rr_path) if d.rule_index is not None else eq.MISS
    assert r.decisions[0] == want
    assert r.decisions[1] != r.decisions[0]

    p4 = p4_plan(table3_ir(4, 1))
    bad_p4 = copy.deepcopy(p4.tables)
    hit = next(e for e in bad_p4[CLASSIFIER] if not e.get("default"))
    hit["params"]["lane"] ^= 1
    r = eq.compare(
        SPACE,
        eq.from_ir(table3_ir(4, 1), SPACE, without_paths),
        eq.from_p4runtime(p4.model_copy(update={"tables": bad_p4}), SPACE, 1, CLASSIFIER),
    )
    assert not r.equivalent


# ---- the walker against brute force ----------------------------------------------------------

SMALL = eq.Space((("a", 3), ("b", 4)))
cubes = st.tuples(st.integers(0, 127), st.integers(0, 127)).map(lambda t: (t[0] & t[1], t[1]))
classifiers = st.builds(
    lambda rules, default: eq.Classifier(tuple((v, m, d) for (v, m), d in rules), default),
    st.lists(st.tuples(cubes, st.integers(0, 2)), max_size=6),
    st.integers(0, 2),
)


def brute(c: eq.Classifier, key: int) -> object:
    return next((d for v, m, d in c.rules if key & m == v), c.default)


@settings(max_examples=400, deadline=None)
@given(a=classifiers, b=classifiers)
def test_the_walk_decides_exactly_what_enumeration_decides(a: eq.Classifier, b: eq.Classifier) -> None:
    r = eq.compare(SMALL, a, b)
    same = all(brute(a, k) == brute(b, k) for k in range(128))
    assert r.equivalent == same
    if not same:
        assert r.counterexample is not None
        k = (r.counterexample["a"] << 4) | r.counterexample["b"]
        assert brute(a, k) != brute(b, k)
