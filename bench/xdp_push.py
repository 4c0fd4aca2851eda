"""Rule push rate of the XDP driver, in map entries per second, against the raw batch
write of the same entries measured in the same run (the ratio is the price of the
all-or-nothing push: diff against the live copy, clear, write, read back, switch).

Scenarios: ~130 000 entries (1024 rules whose UE-prefix and TEID masks expand to 32
entries each, plus the 65 536-entry port array) and seed 000 Table 3's largest load
(16 slices x 32 users x 16 services as 256 rules on /27 user prefixes).
Needs root. Usage: .venv/bin/python bench/xdp_push.py
"""

from __future__ import annotations

import time

from _results import Results

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, Ternary
from sliceportal_xdp.driver import Driver


def expanded(rules: int = 1024) -> RuleIR:
    # src mask with 5 holes -> 32 prefixes; TEID with the 5 low bits free -> 32 values
    src_mask = 0xFFFFFFFF & ~(0b11111 << 8)
    return RuleIR(
        lanes=4,
        paths=8,
        rules=tuple(
            Rule(
                Match(
                    src_ip=Ternary((0x0A000000 + (i << 13)) & src_mask, src_mask),
                    teid=Ternary((i << 5) & 0xFFFFFFE0, 0xFFFFFFE0),
                    dst_port=Ternary(5000 + 2 * (i % 16), 0xFFFF),
                ),
                Action(1 + i % 200, i % 4, i % 8),
            )
            for i in range(rules)
        ),
    )


def table3(slices: int = 16, services: int = 16) -> RuleIR:
    rules = []
    for s in range(slices):
        for v in range(services):
            rules.append(
                Rule(
                    Match(src_ip=Ternary.prefix(0x0A2D0000 + s * 32, 27, 32), dst_port=Ternary.exact(5000 + 2 * v, 16)),
                    Action(s + 1, (v % 8) * 4 // 8, s % 8),
                )
            )
    sl = tuple(SliceEntry(s + 1, s + 1, f"slice{s}", 100 + s, None, (0, 1, 2, 3)) for s in range(slices))
    return RuleIR(lanes=4, paths=8, rules=tuple(rules), slices=sl)


def main() -> None:
    d = Driver({"capacity": {"src_ip": 65536, "teid": 65536}, "overload_poll_s": 0})
    results = Results("xdp_push")
    table = results.table("XDP rule push", ["scenario", "entries", "lower s", "push s", "entries/s", "raw write/s",
                                         "push/raw"])
    print(
        f"{'scenario':22} {'entries':>8} {'lower s':>8} {'push s':>7} {'entries/s':>10} "
        f"{'raw write/s':>12} {'push/raw':>9}"
    )
    for name, ir in (("expanded 1024 rules", expanded()), ("seed000 table3 16x32x16", table3())):
        t0 = time.perf_counter()
        plan = d.lower(ir)
        t_lower = time.perf_counter() - t0
        d.apply(d.lower(RuleIR(lanes=4, paths=8, rules=())), lambda e: None)
        res = d.apply(plan, lambda e: None)
        dp = d.dataplane
        idle = dp.versions[1 - (dp.read_config()[0] & 1)]
        dp.clear(idle)
        t0 = time.perf_counter()
        entries = dp.write(idle, plan.tables, lambda n: None)  # map slots, arrays in full
        t_raw = time.perf_counter() - t0
        print(
            f"{name:22} {entries:8d} {t_lower:8.2f} {res.duration_s:7.2f} {entries / res.duration_s:10.0f} "
            f"{entries / t_raw:12.0f} {t_raw / res.duration_s:9.2f}"
        )
        table.rows.append([name, entries, round(t_lower, 2), round(res.duration_s, 2),
                           round(entries / res.duration_s), round(entries / t_raw), round(t_raw / res.duration_s, 2)])
        if name.startswith("expanded"):
            results.figure("XDP rule push (expanded 1024 rules)", entries / res.duration_s, "entries/s",
                           baseline=entries / t_raw, baseline_name="raw map writes of the same entries",
                           goal=">= 1 M entries/s", met=entries / res.duration_s >= 1e6)
    d.close()
    results.write()


if __name__ == "__main__":
    main()
