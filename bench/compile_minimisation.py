"""Bench: TCAM entries per seed 000 Table 3 scenario, and compile time for 50 000 subscribers.

Run: .venv/bin/python bench/compile_minimisation.py

Figures are printed against a baseline measured in the same run: the one-rule-per-flow
compile of the same configuration (``compile_rules(..., minimise=False)``), which is what
a TCAM would need without minimisation. Seed 000's own figure is 64 rules for the
largest scenario (16 slices x 32 users x 16 services = 8 192 flows).
"""

from __future__ import annotations

import random
import statistics
import time
from collections.abc import Callable

from _results import Results, quick

from sliceportal.rules.compiler import CompileResult, compile_rules
from sliceportal.rules.scenarios import NETFPGA_TARGET, SERVICE_PORTS, TABLE3_SLICES, service_lane, table3_config
from sliceportal.rules.spec import PathMode, ServiceSpec, SliceSpec, SubscriberSpec, TenantSpec

PAPER_RULES_LARGEST = 64


def timed(fn: Callable[[], CompileResult], repeat: int) -> tuple[CompileResult, float]:
    times = []
    result = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        result = fn()
        times.append(time.perf_counter() - t0)
    assert result is not None
    return result, statistics.median(times)


def table3(res: Results) -> None:
    print("Seed 000 Table 3 on the 4-lane x 8-path NetFPGA target (TCAM entries)")
    print(
        f"{'slices':>6} {'flows':>6} {'path mode':>15} {'per-flow':>9} {'minimised':>9} {'ratio':>7} "
        f"{'compile ms':>10} {'per-flow ms':>11}"
    )
    table = res.table(
        "seed 000 Table 3 on the 4-lane x 8-path NetFPGA target (TCAM entries)",
        ["slices", "flows", "path mode", "per-flow rules", "minimised", "ratio", "compile ms"],
    )
    for mode in ("per_slice", "per_user_group"):
        for n in TABLE3_SLICES:
            tenants, slices = table3_config(n, path_mode=mode)  # type: ignore[arg-type]
            small, t_small = timed(lambda t=tenants, s=slices: compile_rules(t, s, NETFPGA_TARGET), 5)
            big, t_big = timed(lambda t=tenants, s=slices: compile_rules(t, s, NETFPGA_TARGET, minimise=False), 3)
            print(
                f"{n:>6} {small.flows:>6} {mode:>15} {len(big.ir.rules):>9} {len(small.ir.rules):>9} "
                f"{len(big.ir.rules) / len(small.ir.rules):>6.0f}x {t_small * 1e3:>10.1f} {t_big * 1e3:>11.1f}"
            )
            table.rows.append(
                [
                    n,
                    small.flows,
                    mode,
                    len(big.ir.rules),
                    len(small.ir.rules),
                    round(len(big.ir.rules) / len(small.ir.rules)),
                    round(t_small * 1e3, 1),
                ]
            )
    tenants, slices = table3_config(16)
    got = len(compile_rules(tenants, slices, NETFPGA_TARGET).ir.rules)
    print(
        f"largest scenario: {got} entries vs. the paper's {PAPER_RULES_LARGEST} "
        f"({got / PAPER_RULES_LARGEST:.2f}x the paper's figure; 16 slices x 4 lanes = 64 distinct actions "
        "is also the lower bound for any rule list)"
    )
    res.figure(
        "largest Table 3 scenario, TCAM entries",
        got,
        "entries",
        baseline=PAPER_RULES_LARGEST,
        baseline_name="the paper's figure",
        goal="<= the paper's 64",
        met=got <= PAPER_RULES_LARGEST,
    )


def big_config(
    n_subscribers: int, n_slices: int, scattered: float, path_mode: PathMode
) -> tuple[list[TenantSpec], list[SliceSpec]]:
    """Slices of ~equal size; each slice's UEs come from its own /16, a fraction scattered."""
    rng = random.Random(42)
    tenants = [TenantSpec(ref=t + 1, name=f"mvno-{t}", vni=1000 + t) for t in range(4)]
    services = tuple(ServiceSpec(f"udp-{p}", service_lane(p), dst_ports=((p, p),)) for p in SERVICE_PORTS)
    per_slice = n_subscribers // n_slices
    slices = []
    ref = 0
    for k in range(n_slices):
        base = (10 << 24) | (k << 16)
        contiguous = int(per_slice * (1 - scattered))
        hosts = list(range(contiguous)) + rng.sample(range(contiguous, 1 << 16), per_slice - contiguous)
        subs = []
        for h in hosts:
            ref += 1
            subs.append(SubscriberSpec(ref=ref, imsi=f"{ref:015d}", ue_ip=base + h, teids=(ref,)))
        slices.append(
            SliceSpec(
                ref=k + 1,
                name=f"slice-{k}",
                tenant_ref=k % 4 + 1,
                type_lanes=(0, 2, 4, 6),
                services=services,
                subscribers=tuple(subs),
                path_mode=path_mode,
            )
        )
    return tenants, slices


def fifty_thousand(res: Results) -> None:
    print()
    print("Compile time for 50 000 subscribers x 16 services (800 000 flows), 64 slices, 8-path x 4-lane target")
    print(f"{'case':>36} {'per-flow rules':>14} {'minimised':>9} {'compile s':>9} {'per-flow s':>10} {'speed-up':>8}")
    table = res.table(
        "compile time, 50 000 subscribers x 16 services (800 000 flows), 64 slices",
        ["case", "per-flow rules", "minimised", "compile s", "per-flow s", "speed-up"],
    )
    for label, scattered, mode in (
        ("contiguous UE blocks, per slice", 0.0, "per_slice"),
        ("10% scattered UEs, per slice", 0.1, "per_slice"),
        ("10% scattered UEs, per user group", 0.1, "per_user_group"),
    ):
        tenants, slices = big_config(50_000, 64, scattered, mode)  # type: ignore[arg-type]
        small, t_small = timed(lambda t=tenants, s=slices: compile_rules(t, s, NETFPGA_TARGET), 3)
        big, t_big = timed(lambda t=tenants, s=slices: compile_rules(t, s, NETFPGA_TARGET, minimise=False), 1)
        assert small.rules_before == len(big.ir.rules)
        print(
            f"{label:>36} {len(big.ir.rules):>14} {len(small.ir.rules):>9} {t_small:>9.3f} {t_big:>10.3f} "
            f"{t_big / t_small:>7.1f}x"
        )
        table.rows.append(
            [
                label,
                len(big.ir.rules),
                len(small.ir.rules),
                round(t_small, 3),
                round(t_big, 3),
                round(t_big / t_small, 1),
            ]
        )


if __name__ == "__main__":
    results = Results("compile_minimisation")
    table3(results)
    if not quick():
        fifty_thousand(results)
    results.write()
