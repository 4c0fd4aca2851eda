"""Writes per push of a one-rule change, per backend (issue #14 item 4: "the write count of a
one-rule change"), against the size of the table it changes, measured in the same run.

Run: .venv/bin/python bench/hitless_writes.py   (root: XDP; `make -C dataplane/netfpga all`)

One rule set for all three planes (40 random overlapping rules over every slice type,
dataplane/conformance/hitless.py), pushed (and a second version, so both copies / banks of
the A/B planes hold a rule set); then chains of one-rule changes of one kind each (another
action for one rule; a rule added at the top, in the middle; one removed from the middle),
every change pushed on top of the previous one, as an operator editing rules does. Per push:
* P4Runtime: table updates written (insert / modify / delete);
* XDP: map slots written into the idle A/B copy, + 1 for the generation store. The idle copy
  holds the version before the live one, so in a chain a push writes the slots of the last
  two changes;
* NetFPGA: CSR register writes: the shadow-bank entry words that differ from the new bank
  image (stable slots with free slots between them, docs/netfpga.md "Stable slots"), count,
  version (2 words) and the ACTIVE_BANK flip; the shadow bank also holds the version before
  last.
The baseline is the writes of the same rule set pushed into empty tables.
"""

from __future__ import annotations

import random
import statistics
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT / "dataplane" / "bmv2"), str(ROOT / "dataplane" / "conformance")]

import hitless  # noqa: E402
from _results import Results, quick  # noqa: E402
from bmv2_target.testing import Target  # noqa: E402

from sliceportal.drivers.contract import NativePlan, ProgressEvent  # noqa: E402
from sliceportal.rules.ir import Action, MissMode, MissPolicy, Rule, RuleIR, SliceEntry  # noqa: E402
from sliceportal_netfpga import simulator  # noqa: E402
from sliceportal_netfpga.driver import Driver as NetfpgaDriver  # noqa: E402
from sliceportal_p4rt.driver import Driver as P4rtDriver  # noqa: E402
from sliceportal_xdp.driver import Driver as XdpDriver  # noqa: E402

RULES = 40
KINDS = ("action changed", "added at the top", "added in the middle", "removed from the middle")


class Counting:
    """A progress callback that keeps the last cumulative ``write`` count."""

    def __init__(self) -> None:
        self.done = 0
        self.events = 0

    def __call__(self, e: ProgressEvent) -> None:
        if e.phase == "write":
            self.done, self.events = e.done, self.events + 1


# each returns (writes of the push, entries in which the plan differs from the live table)
def writes_p4(drv: P4rtDriver, plan: NativePlan) -> tuple[int, int]:
    r = drv.apply(plan, lambda e: None)
    return r.added + r.removed + r.modified, r.added + r.removed + r.modified


def writes_xdp(drv: XdpDriver, plan: NativePlan) -> tuple[int, int]:
    c = Counting()
    r = drv.apply(plan, c)
    # + the generation store (none for an unchanged plan)
    return c.done + (1 if c.events else 0), r.added + r.removed + r.modified


def writes_netfpga(drv: NetfpgaDriver, plan: NativePlan) -> tuple[int, int]:
    c = Counting()
    r = drv.apply(plan, c)
    return c.done + 1, r.added + r.removed + r.modified  # + the ACTIVE_BANK flip (no rate limits: no disables)


def change(rng: random.Random, rules: list[Rule], kind: str, slices: list[SliceEntry]) -> list[Rule]:
    out = list(rules)
    if kind == "action changed":
        i = rng.randrange(len(out))
        a = out[i].action
        others = [(s.slice_id, lane) for s in slices for lane in s.lanes if (s.slice_id, lane) != (a.slice_id, a.lane)]
        sid, lane = rng.choice(others)
        out[i] = Rule(out[i].match, Action(sid, lane, 0))
    elif kind == "added at the top":
        out.insert(0, hitless.random_rule(rng, slices))
    elif kind == "added in the middle":
        out.insert(len(out) // 2, hitless.random_rule(rng, slices))
    else:
        out.pop(len(out) // 2)
    return out


def main() -> None:
    chain = 4 if quick() else 10
    rng = random.Random(14)
    slices = hitless.catalogue_slices(4)
    rules = [hitless.random_rule(rng, slices) for _ in range(RULES)]
    res = Results("hitless_writes")
    table = res.table(
        "writes per push of a one-rule change",
        [
            "backend",
            "unit",
            "table (empty to full)",
            "change",
            "pushes",
            "writes per push mean",
            "max",
            "diff vs live mean",
        ],
        note=f"{RULES} random rules over every slice type; each change pushed on top of the previous one "
        "(a chain); XDP and NetFPGA write the idle copy / shadow bank, which holds the version before last. "
        "diff vs live: what the push reports against the live table (P4 updates, XDP slots, NetFPGA TCAM "
        "entries). A P4 mean below 1: a rule added or removed whose match an earlier rule already has "
        "is never hit and has no entry",
    )
    with tempfile.TemporaryDirectory() as tmp:
        sim = simulator.start(Path(tmp) / "s.sock")
        target = Target("--priority-queues", "8")
        p4 = P4rtDriver({"address": target.address, "access_ports": {1: 100}, "trunk_ports": [2], "uplink_port": 2})
        xdp = XdpDriver({"lanes": 4, "paths": 8, "overload_poll_s": 0, "lane_cpus": dict.fromkeys(range(4), 0)})
        nf = NetfpgaDriver({"address": sim.address})
        planes: list[
            tuple[str, str, Callable[[RuleIR], NativePlan], Callable[[NativePlan], tuple[int, int]], int, int]
        ] = [
            ("P4Runtime (bundled target)", "table updates", p4.lower, lambda p: writes_p4(p4, p), 8, 1),
            ("XDP", "map slots (+1 generation)", xdp.lower, lambda p: writes_xdp(xdp, p), 4, 8),
            ("NetFPGA (Verilator)", "CSR writes", nf.lower, lambda p: writes_netfpga(nf, p), 4, 8),
        ]
        try:
            for name, unit, lower, push, lanes, paths in planes:

                def ir_of(rs: list[Rule], lanes: int = lanes, paths: int = paths) -> RuleIR:
                    return RuleIR(
                        lanes=lanes,
                        paths=paths,
                        rules=tuple(rs),
                        slices=tuple(slices),
                        tenants=(hitless.TENANT,),
                        miss=MissPolicy(mode=MissMode.ALGORITHM1),
                    )

                full, _ = push(lower(ir_of(rules)))  # into empty tables: the baseline
                # both copies / banks filled (an A/B plane's first push went into an empty one)
                push(lower(ir_of(change(random.Random(99), rules, "action changed", slices))))
                push(lower(ir_of(rules)))
                current = rules
                for kind in KINDS:
                    krng = random.Random(KINDS.index(kind))  # the same changes on every plane
                    counts, diffs = [], []
                    for _ in range(chain):
                        nxt = change(krng, current, kind, slices)
                        n, d = push(lower(ir_of(nxt)))
                        counts.append(n)
                        diffs.append(d)
                        current = nxt
                    mean = statistics.fmean(counts)
                    table.rows.append(
                        [name, unit, full, kind, chain, round(mean, 1), max(counts), round(statistics.fmean(diffs), 1)]
                    )
                    print(
                        f"{name:<28} {kind:<24} {mean:>10.1f} {unit} per push (max {max(counts)}; "
                        f"empty to full: {full})",
                        flush=True,
                    )
                    if kind == "action changed":
                        res.figure(
                            f"{name}: writes of a one-rule action change",
                            mean,
                            unit,
                            baseline=full,
                            baseline_name="writes of the whole rule set into empty tables",
                        )
        finally:
            p4.close()
            xdp.close()
            nf.close()
            target.stop()
            sim.stop()
    res.write()


if __name__ == "__main__":
    main()
