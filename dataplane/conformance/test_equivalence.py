"""Rule-set equivalence of the three lowered forms and the IR (issue #20 item 4) for the
seed 000 Table 3 scenarios, through the product's engine (sliceportal.rules.equivalence)
and each driver's own ternary view of its plan: proven over the whole key space, XDP
included (its bit-vector tables expanded, not sampled). The engine's own tests, random
configurations and broken plans are in backend/tests/rules/test_equivalence_*.py."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest

from sliceportal.drivers.contract import ternary_view_of
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.equivalence import EquivalenceVerdict, check
from sliceportal.rules.ir import FIELD_WIDTHS
from sliceportal.rules.scenarios import TABLE3_SLICES, table3_config
from sliceportal.rules.spec import TargetSpec
from sliceportal_netfpga.driver import Driver as NetfpgaDriver
from sliceportal_p4rt.driver import Driver as P4rtDriver
from sliceportal_xdp.driver import Driver as XdpDriver

TENANT_VID = 100


def driver(name: str, tmp: Path) -> Any:
    return {
        "netfpga": lambda: NetfpgaDriver({"address": str(tmp / "x.sock")}),
        "p4rt": lambda: P4rtDriver({"lanes": 4, "access_ports": {1: TENANT_VID}, "trunk_ports": [2], "uplink_port": 2}),
        "xdp": lambda: XdpDriver({}),
    }[name]()


@pytest.mark.parametrize("plane", ["netfpga", "p4rt", "xdp"])
@pytest.mark.parametrize("n_slices", TABLE3_SLICES)
def test_lowered_entries_equal_the_ir_on_the_whole_key_space(plane: str, n_slices: int, tmp_path: Path) -> None:
    d = driver(plane, tmp_path)
    caps = d.capabilities()
    tenants, slices = table3_config(n_slices)
    tenants = tuple(dataclasses.replace(t, vlan=TENANT_VID) for t in tenants)
    target = TargetSpec(
        lanes=caps.lanes, paths=caps.paths, match_fields=frozenset(caps.match_fields) & FIELD_WIDTHS.keys()
    )
    ir = compile_rules(tenants, slices, target).ir
    r = check(ir, ternary_view_of(d, d.lower(ir)))
    assert r.verdict is EquivalenceVerdict.PROVEN, (r.detail, r.counterexample)
