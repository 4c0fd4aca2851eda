"""Rule push rate of the XDP driver, in map entries per second, against two raw writes of
the same (already packed) entries measured in the same run: one ``bpf_map_update_elem``
per entry, and one ``bpf_map_update_batch`` per map. The push itself packs the plan,
diffs it against both table copies, writes only the changed slots in batches, reads the
copy back, compares it byte for byte and switches versions (all-or-nothing).

Scenarios: ~130 000 entries (1024 rules whose UE-prefix and TEID masks expand to 32
entries each, plus the 65 536-entry port array) and seed 000 Table 3's largest load
(16 slices x 32 users x 16 services as 256 rules on /27 user prefixes). Each scenario is
pushed three ways: into a copy that holds nothing of it (every entry written), again
unchanged (nothing written) and with one rule changed (only its slots written).

A single push of ~0.1-0.3 s swings by 2x with what else runs on the machine, so the first
push, the re-push and both raw writes are measured in several interleaved rounds, each on
freshly loaded data planes, and the medians reported, with the load average beside them.
Needs root. Usage: .venv/bin/python bench/xdp_push.py
"""

from __future__ import annotations

import os
import statistics
import time
from collections.abc import Callable

from _results import Results, quick

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, Ternary
from sliceportal_xdp import image
from sliceportal_xdp.dataplane import DataPlane, VersionMaps
from sliceportal_xdp.driver import Driver

EMPTY = RuleIR(lanes=4, paths=8, rules=())


def expanded(rules: int = 1024, moved: int = 0) -> RuleIR:
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
                Action(1 + i % 200, (i + moved) % 4 if i == 0 else i % 4, i % 8),
            )
            for i in range(rules)
        ),
    )


def table3(slices: int = 16, services: int = 16, moved: int = 0) -> RuleIR:
    rules = []
    for s in range(slices):
        for v in range(services):
            lane = (v % 8) * 4 // 8
            rules.append(
                Rule(
                    Match(src_ip=Ternary.prefix(0x0A2D0000 + s * 32, 27, 32), dst_port=Ternary.exact(5000 + 2 * v, 16)),
                    Action(s + 1, (lane + moved) % 4 if (s, v) == (0, 0) else lane, s % 8),
                )
            )
    sl = tuple(SliceEntry(s + 1, s + 1, f"slice{s}", 100 + s, None, (0, 1, 2, 3)) for s in range(slices))
    return RuleIR(lanes=4, paths=8, rules=tuple(rules), slices=sl)


def entries_of(img: image.Image) -> int:
    """Map slots of an image (arrays count every slot, as the push writes them)."""
    n = 0
    for f, v in img.items():
        n += len(v) if isinstance(v, image.Keyed) else image.ARRAY_SHAPE[f][0]
    return n


def raw_write(dp: DataPlane, v: VersionMaps, img: image.Image, batched: bool) -> float:
    """Seconds to write ``img`` into an emptied copy: the kernel's share of a push."""
    dp.clear(v)
    t0 = time.perf_counter()
    for f, val in img.items():
        m = v.table(f)
        if isinstance(val, image.Keyed):
            keys, vals = list(map(bytes, val.keys)), list(map(bytes, val.values))
        else:
            n, size = image.ARRAY_SHAPE[f]
            keys = [i.to_bytes(4, "little") for i in range(n)]
            vals = [val[i * size : (i + 1) * size] for i in range(n)]
        if batched:
            m.update_batch(b"".join(keys), b"".join(vals))
        else:
            for k, x in zip(keys, vals, strict=True):
                m.update(k, x)
    return time.perf_counter() - t0


def timed(f: Callable[[], object]) -> float:
    t0 = time.perf_counter()
    f()
    return time.perf_counter() - t0


OPTIONS = {"capacity": {"src_ip": 65536, "teid": 65536}, "overload_poll_s": 0}


def fresh() -> Driver:
    """A newly loaded data plane: each measurement starts from maps no earlier one has
    churned (32 k LPM inserts and deletes just before leave the kernel freeing nodes,
    which slowed the next writer 2-5x here)."""
    d = Driver(OPTIONS)
    assert d.dataplane is not None
    return d


def load() -> str:
    return "/".join(f"{x:.1f}" for x in os.getloadavg())


def main() -> None:
    rounds = 3 if quick() else 7
    results = Results("xdp_push")
    cols = [
        "scenario",
        "entries",
        "lower s",
        "push s",
        "entries/s",
        "raw per-entry/s",
        "raw batched/s",
        "push/batched",
        "push CPU s",
        "re-push s",
        "re-push slots written",
        "1-rule change s",
        "1-rule slots written",
        "load avg",
    ]
    table = results.table("XDP rule push", cols)
    print(
        f"{'scenario':24} {'entries':>8} {'push s':>7} {'entries/s':>10} {'per-entry/s':>12} {'batched/s':>10} "
        f"{'push/bat':>8} {'re-push s':>9} {'1-rule s':>8} {'written':>7}  load"
    )
    for name, make in (("expanded 1024 rules", expanded), ("seed000 table3 16x32x16", table3)):
        ir = make()
        d = fresh()
        t0 = time.perf_counter()
        plan = d.lower(ir)  # a fresh plane holds no positions: the same plan for every fresh plane
        t_lower = time.perf_counter() - t0
        empty = d.lower(EMPTY)
        d.close()
        img = image.encode(plan.tables)
        entries = entries_of(img)
        load_before = load()
        t_single, t_batch, t_first, t_again, cpu_first, re_written = [], [], [], [], [], 0
        for _ in range(rounds):
            # the raw baselines, each into an idle copy of its own fresh data plane
            for batched, out in ((False, t_single), (True, t_batch)):
                raw = fresh()
                dp = raw.dataplane
                out.append(raw_write(dp, dp.versions[1], img, batched=batched))
                raw.close()
            # the push into a fresh data plane that holds the empty rule set: every entry is written
            d = fresh()
            d.apply(empty, lambda e: None)
            c0 = time.thread_time()  # the push's own CPU (user + kernel): what the load does not inflate
            t_first.append(d.apply(plan, lambda e: None).duration_s)
            cpu_first.append(time.thread_time() - c0)
            again = d.apply(plan, lambda e: None)
            t_again.append(again.duration_s)
            re_written = max(re_written, again.added + again.removed + again.modified)
            d.close()
        # a small change (once: each lowering of the expanded set takes seconds): once both
        # copies hold this scenario, one rule moves lane
        d = fresh()
        d.apply(empty, lambda e: None)
        d.apply(plan, lambda e: None)
        d.apply(d.lower(make(moved=1)), lambda e: None)
        d.apply(plan, lambda e: None)
        changed_plan = d.lower(make(moved=2))
        written = 0

        def count(ev: object) -> None:
            nonlocal written
            if getattr(ev, "phase", "") == "write":
                written = max(written, int(getattr(ev, "done", 0)))

        changed = d.apply(changed_plan, count)
        d.close()
        first, again_s = statistics.median(t_first), statistics.median(t_again)
        single, batch = statistics.median(t_single), statistics.median(t_batch)
        rate = entries / first
        loads = f"{load_before} -> {load()}"
        print(
            f"{name:24} {entries:8d} {first:7.3f} {rate:10.0f} {entries / single:12.0f} "
            f"{entries / batch:10.0f} {batch / first:8.2f} {again_s:9.3f} "
            f"{changed.duration_s:8.3f} {written:7d}  {loads}"
        )
        print(f"  first pushes s: {[round(t, 3) for t in t_first]}, CPU s: {[round(t, 3) for t in cpu_first]}")
        table.rows.append(
            [
                name,
                entries,
                round(t_lower, 2),
                round(first, 3),
                round(rate),
                round(entries / single),
                round(entries / batch),
                round(batch / first, 2),
                round(statistics.median(cpu_first), 3),
                round(again_s, 3),
                re_written,
                round(changed.duration_s, 3),
                written,
                loads,
            ]
        )
        if name.startswith("expanded"):
            note = f"median of {rounds} rounds, fresh data planes; load avg {loads}"
            results.figure(
                "XDP rule push (expanded 1024 rules)",
                rate,
                "entries/s",
                baseline=entries / single,
                baseline_name="raw per-entry map writes of the same entries",
                goal=">= 1 M entries/s",
                met=rate >= 1e6,
                note=note,
            )
            results.figure(
                "XDP rule push vs batched raw writes (expanded 1024 rules)",
                rate,
                "entries/s",
                baseline=entries / batch,
                baseline_name="raw batched map writes of the same entries",
                note=note,
            )
            results.figure(
                "XDP unchanged re-push (expanded 1024 rules)", again_s, "s", note=f"{re_written} slots written; {note}"
            )
    table.note = (
        "entries: map slots of the plan (arrays in full); push: pack + diff + batched write of changed "
        "slots + byte read-back + switch; raw: the packed entries written into an empty copy; each on "
        f"a freshly loaded data plane; push, re-push and raw: medians of {rounds} interleaved rounds; "
        "push CPU: the pushing thread's CPU time, user + kernel (wall time minus waiting for a core); "
        "1-rule change: one push; load avg: 1/5/15 min before -> after"
    )
    results.write()


if __name__ == "__main__":
    main()
