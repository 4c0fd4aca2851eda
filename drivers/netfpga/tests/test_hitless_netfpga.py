"""Hitless pushes on the NetFPGA data plane (issue #14 item 4), on the Verilator model of the RTL.

Random rule-set updates over every slice type, with per-slice rate limits switched on, off
and between rates (dataplane/conformance/hitless.py: the generator and oracle the P4 and XDP
proofs use), pushed through the driver one CSR write per batch. After every write of a push
(token-bucket writes, shadow-bank entry words, entry count and version, then — after the
``verify`` read-back — the ACTIVE_BANK flip and the disables of buckets no longer used) the
watched probes go through the RTL (INJECT + RUN of the model) and each must leave with the
verdict (slice, lane, RR path) of the old or of the new rule set; none may be dropped
(the rates are far above the probes' rate); after the push, the new verdict.

The model is cycle-accurate and single-threaded: between two CSR writes it runs the probes
to completion, so "between writes" is exact here. Every write is probed for the first
updates; after that, every write of the bucket phase, of the flip and after, and a sample of
the shadow-bank writes (which packets cannot see: the bank is not the matched one), so 100
updates fit in about a minute of test time.

Write count: the shadow bank holds the version before the live one. A push writes the
entry words in which that bank differs from the new image (a slot freed: its src IP key
and mask words), the entry count if it changes, the 2 version words, the buckets that
change (rate, burst, enable), 1 flip, and the disables of buckets no longer used. Where
entries sit is the driver's choice (stable slots with gaps), so the test reads every word
of the shadow bank from the card before and after the push and counts those that changed;
that the new bank holds exactly the plan's entries in order is checked after every push.
"""

from __future__ import annotations

import csv
import random
import sys
from pathlib import Path

import pytest
from scapy.utils import wrpcap

from sliceportal.drivers.contract import NativePlan, ProgressEvent
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import build
from sliceportal_netfpga import regmap
from sliceportal_netfpga.csr import CsrClient
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.ratelimit import TABLE as RATE_TABLE
from sliceportal_netfpga.simulator import SimProcess
from sliceportal_netfpga.tcam import decode_slot

CONFORMANCE = Path(__file__).resolve().parents[3] / "dataplane" / "conformance"
if str(CONFORMANCE) not in sys.path:  # --import-mode=importlib: the shared helper by path
    sys.path.insert(0, str(CONFORMANCE))

import hitless  # noqa: E402

LANES, PATHS = 4, 8
FIELDS = ("slice_id", "lane", "rr_path")
UPDATES = 100
CAPACITY = 64  # TCAM entries per bank of the model (dataplane/netfpga/Makefile)
EVERY_WRITE = 20  # updates probed after every single write; later ones sample the bank writes


class Prober:
    """Runs a set of frames through the model and returns each frame's verdict, in order."""

    def __init__(self, sim: SimProcess, tmp: Path) -> None:
        self.sim, self.tmp, self.rounds = sim, tmp, 0

    def load(self, frames: list[bytes]) -> None:
        self.n = len(frames)
        wrpcap(str(self.tmp / "probes.pcap"), frames, linktype=1)

    def verdicts(self) -> list[tuple[int, ...] | None]:
        out = self.tmp / "out.pcap"
        self.sim.command(f"CAPTURE {out}")
        self.sim.command(f"INJECT {self.tmp / 'probes.pcap'} 200")
        self.sim.command("RUN")
        self.rounds += 1
        with open(f"{out}.csv") as fh:
            rows = sorted(csv.DictReader(fh), key=lambda r: int(r["in_cycle"]))
        got: list[tuple[int, ...] | None] = [(int(r["slice_id"]), int(r["lane"]), int(r["rr_path"])) for r in rows]
        return got + [None] * (self.n - len(got))  # None: the frame did not come out


def read_bank(csr: CsrClient, bank: int) -> tuple[int, list[int]]:
    """The bank's COUNT and every entry word of it, as the card holds them."""
    words = csr.read_many(regmap.entry(bank, i, w) for i in range(CAPACITY) for w in range(regmap.ENTRY_WORDS))
    return csr.read(regmap.bank_count(bank)), words


def entries_of(bank: tuple[int, list[int]]) -> list[dict[str, object]]:
    """The entries below COUNT in slot order (free slots skipped), as plans list them."""
    count, words = bank
    slots = [decode_slot(words[i * 7 : i * 7 + 7]) for i in range(count)]
    return [e.native() for e in slots if e is not None]


def expected_writes(
    before: tuple[int, list[int]], after: tuple[int, list[int]], live: NativePlan, new: NativePlan
) -> int:
    """The CSR writes of a push that turned the shadow bank from ``before`` into ``after``
    (read from the card), with ``live`` the plan of the active bank: the diff as this plane's
    push protocol defines it (module docstring)."""
    words = sum(1 for a, b in zip(before[1], after[1], strict=True) if a != b)
    count = 0 if before[0] == after[0] else 1
    old_b = {b["slice_id"]: b for b in live.tables[RATE_TABLE]}
    new_b = {b["slice_id"]: b for b in new.tables[RATE_TABLE]}
    buckets = sum(3 for s, b in new_b.items() if old_b.get(s) != b)
    disables = sum(1 for s in old_b if s not in new_b)
    return words + count + 2 + buckets + 1 + disables


def test_random_updates_classify_every_probe_old_or_new_between_csr_writes(sim: SimProcess, tmp_path: Path) -> None:
    rng = random.Random(1415)
    ir = hitless.first_ir(rng, lanes=LANES, paths=PATHS, rules=10, miss=MissPolicy(mode=MissMode.ALGORITHM1))
    slices, rules = list(ir.slices), list(ir.rules)
    drv = Driver({"address": sim.address, "batch": 1, "paths": PATHS, "lanes": LANES})
    plan = drv.lower(ir)
    drv.apply(plan, lambda e: None)
    csr = CsrClient(sim.address, 30)
    flows = hitless.probe_flows(rng)
    frames = [bytes(build(f, bytes(64))) for f in flows]
    prober = Prober(sim, tmp_path)
    tally = hitless.Tally()
    per_push: list[int] = []
    try:
        for n in range(UPDATES):
            rules = hitless.mutate(rng, rules, slices, PATHS)
            if rng.random() < 0.3:
                slices = hitless.mutate_rate_limits(rng, slices)
            new_ir = hitless.rule_ir(ir, rules, slices)
            new_plan = drv.lower(new_ir)
            up = hitless.update(rng, ir, new_ir, flows, FIELDS)
            prober.load([frames[i] for i in up.watch])
            writes = 0
            flipped = False
            sample = rng.sample(range(1, 200), k=4)

            live_b = plan.tables[RATE_TABLE]
            shadow = 1 - (csr.read(regmap.ACTIVE_BANK) & 1)
            before = read_bank(csr, shadow)
            bucket_writes = 3 * sum(1 for b in new_plan.tables[RATE_TABLE] if b not in live_b)

            def probe(
                e: ProgressEvent,
                n: int = n,
                sample: list[int] = sample,
                bucket_writes: int = bucket_writes,
                up: hitless.Update = up,
            ) -> None:
                nonlocal writes, flipped
                if e.phase == "write":
                    writes = e.done
                    bank_phase = e.done > bucket_writes
                    if n >= EVERY_WRITE and bank_phase and e.done not in sample and e.done != e.total:
                        return
                elif e.phase == "commit":
                    flipped = True
                else:
                    return
                tally.check(prober.verdicts(), up.allowed, f"update {n}, {e.phase} {e.done}/{e.total}")

            drv.apply(new_plan, probe)
            assert flipped
            got = prober.verdicts()
            assert got == up.expected, f"update {n}: after the push"
            # the flip and the disables come after the last "write" event: counted from the data plane
            after = read_bank(csr, shadow)
            assert entries_of(after) == new_plan.tables["tcam"], f"update {n}"
            expected = expected_writes(before, after, plan, new_plan)
            flip_and_disables = 1 + sum(
                1
                for b in plan.tables[RATE_TABLE]
                if b["slice_id"] not in {x["slice_id"] for x in new_plan.tables[RATE_TABLE]}
            )
            assert writes + flip_and_disables == expected, f"update {n}"
            per_push.append(expected)
            ir, plan = new_ir, new_plan
        state = drv.read_state()
        assert state.tables == plan.tables
    finally:
        drv.close()
        csr.close()
    assert tally.checked > 1000
    assert tally.neither == 0, str(tally)
    print(
        f"\nNetFPGA: {UPDATES} pushes, CSR writes per push mean {sum(per_push) / len(per_push):.1f}, "
        f"{prober.rounds} probe rounds; {tally}"
    )


def exact_rule(n: int) -> Rule:
    """Rule n: one /32 source, one port: distinct from every other, so none shadows another."""
    return Rule(
        Match(src_ip=Ternary(0x0A00_0000 | n, 0xFFFF_FFFF), dst_port=Ternary(5000 + n % 8, 0xFFFF)),
        Action(slice_id=1 + n % 4, lane=n % LANES, rr_path=n % PATHS),
    )


@pytest.mark.parametrize("size", [8, 24, 48])
def test_a_rule_added_or_removed_in_the_middle_writes_a_bounded_number_of_csr_words(sim: SimProcess, size: int) -> None:
    """Stable slots with gaps: each push of one added or removed rule writes the slots of the
    last two changes (the shadow bank holds the version before the live one), the version
    and the flip: a bound that does not grow with the table (before: every rule below the
    change moved, 7 words each)."""
    drv = Driver({"address": sim.address, "paths": PATHS, "lanes": LANES})

    def push(rules: list[Rule]) -> int:
        seen: list[ProgressEvent] = []
        plan = drv.lower(RuleIR(lanes=LANES, paths=PATHS, rules=tuple(rules)))
        drv.apply(plan, seen.append)
        assert drv.read_state().tables["tcam"] == plan.tables["tcam"]
        return max((e.done for e in seen if e.phase == "write"), default=0) + 1  # + the ACTIVE_BANK flip

    try:
        base = [exact_rule(n) for n in range(size)]
        push(base)
        push(base)  # both banks hold the table
        writes = []
        for k in range(4):
            mid = size // 2 + k
            writes.append(push([*base[:mid], exact_rule(1000 + k), *base[mid:]]))  # added in the middle
            writes.append(push(base))  # and removed again
    finally:
        drv.close()
    # per push: at most 2 slots of 7 words each for each of the last two changes, COUNT, VERSION, flip
    assert max(writes) <= 2 * 2 * regmap.ENTRY_WORDS + 4, writes
    assert writes[0] >= 3 + 3  # words of the added rule's slot (a free slot holds an older entry's), VERSION, flip
    # removing it again: the shadow bank still holds the table without it, so at most the
    # slots the insertion shifted (none where the middle had a free slot: 8 and 24 rules)
    assert writes[1] <= writes[0], writes
    if size < 32:
        assert writes[1] == 3, writes
    print(f"\n{size} rules: CSR writes per push {writes}")
