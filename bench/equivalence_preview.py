"""Bench: what the rule-set equivalence proof (issue #20 item 4) adds to a deploy preview.

Run: .venv/bin/python bench/equivalence_preview.py

For each seed 000 Table 3 scenario and each bundled driver: the time of the proof
(``services.equivalence.check_plan``: the driver's ternary view of its plan + the exact
walk) against a baseline measured in the same run, the rest of the preview: compiling the
configuration for that driver and lowering it (``compile_rules`` + ``driver.lower``).
"""

from __future__ import annotations

import dataclasses
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from _results import Results, quick

from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.equivalence import MAX_SECONDS, EquivalenceVerdict
from sliceportal.rules.ir import FIELD_WIDTHS
from sliceportal.rules.scenarios import TABLE3_SLICES, table3_config
from sliceportal.rules.spec import TargetSpec
from sliceportal.services.equivalence import check_plan
from sliceportal_netfpga.driver import Driver as NetfpgaDriver
from sliceportal_p4rt.driver import Driver as P4rtDriver
from sliceportal_xdp.driver import Driver as XdpDriver


def median_s(fn: Callable[[], Any], repeat: int) -> tuple[Any, float]:
    times, out = [], None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return out, statistics.median(times)


def main() -> None:
    res = Results("equivalence_preview")
    repeat = 3 if quick() else 9
    tmp = Path(tempfile.mkdtemp())
    drivers = {
        "netfpga": NetfpgaDriver({"address": str(tmp / "absent.sock")}),
        "p4rt": P4rtDriver({"lanes": 8, "trunk_ports": [1, 2], "uplink_port": 2}),
        "xdp": XdpDriver({}),
    }
    table = res.table(
        "equivalence proof per preview, seed 000 Table 3 (median ms)",
        ["slices", "driver", "IR rules", "view entries", "cubes", "verdict", "proof ms", "compile+lower ms", "ratio"],
    )
    print(
        f"{'slices':>6} {'driver':>8} {'rules':>6} {'entries':>7} {'cubes':>6} {'verdict':>8} "
        f"{'proof ms':>9} {'compile+lower ms':>17} {'ratio':>6}"
    )
    worst = 0.0
    for n in TABLE3_SLICES:
        tenants, slices = table3_config(n)
        tenants = tuple(dataclasses.replace(t, vlan=100) for t in tenants)
        for name, d in drivers.items():
            caps = d.capabilities()
            target = TargetSpec(
                lanes=caps.lanes, paths=caps.paths, match_fields=frozenset(caps.match_fields) & FIELD_WIDTHS.keys()
            )

            def preview(d: Any = d, target: TargetSpec = target, tenants: Any = tenants, slices: Any = slices) -> Any:
                ir = compile_rules(tenants, slices, target).ir
                return ir, d.lower(ir)

            (ir, plan), base_s = median_s(preview, repeat)
            r, proof_s = median_s(lambda d=d, ir=ir, plan=plan: check_plan(ir, plan, d), repeat)
            worst = max(worst, proof_s)
            ratio = proof_s / base_s
            print(
                f"{n:>6} {name:>8} {len(ir.rules):>6} {r.checked_entries:>7} {r.cubes:>6} {r.verdict.value:>8} "
                f"{proof_s * 1e3:>9.1f} {base_s * 1e3:>17.1f} {ratio:>5.2f}x"
            )
            table.rows.append(
                [
                    n,
                    name,
                    len(ir.rules),
                    r.checked_entries,
                    r.cubes,
                    r.verdict.value,
                    round(proof_s * 1e3, 1),
                    round(base_s * 1e3, 1),
                    round(ratio, 2),
                ]
            )
            assert r.verdict is EquivalenceVerdict.PROVEN, (n, name, r.detail)
            if n == TABLE3_SLICES[-1]:
                res.figure(
                    f"equivalence proof, largest Table 3 scenario, {name}",
                    proof_s * 1e3,
                    "ms",
                    baseline=base_s * 1e3,
                    baseline_name="compile + lower of the same preview",
                )
    res.figure(
        "slowest proof over all scenarios and drivers",
        worst * 1e3,
        "ms",
        goal=f"< 10 % of the walk's {MAX_SECONDS:g} s budget",
        met=worst < 0.1 * MAX_SECONDS,
    )
    res.write()


if __name__ == "__main__":
    main()
