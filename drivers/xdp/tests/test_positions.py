"""Stable rule positions (issue #14 item 4): a one-rule add or remove writes O(1) map slots.

Pure part: ``positions.assign`` keeps held positions while the order allows, puts new rules
into gaps, still fits every count up to the bitmap width; signatures recognise a rule
whatever else shares the tables. Kernel part: the slots a push writes for a rule added in
the middle / removed from the middle of a 50- and a 500-rule table are the same handful
(dense numbering rewrote every rule below), and a new driver process on the same pinned
maps keeps the positions it finds there.
"""

from __future__ import annotations

import ipaddress
import os
import random
from collections.abc import Iterator

import pytest

from sliceportal.drivers.contract import ProgressEvent
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, Ternary
from sliceportal_xdp import layout, positions
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.lowering import lower_tables
from sliceportal_xdp.options import XdpOptions

BASE = int(ipaddress.IPv4Address("10.1.0.0"))
CAP = XdpOptions().table_capacity()


def rule(i: int) -> Rule:
    """A narrow rule: one UE address, one port (its own footprint: a few slots)."""
    return Rule(
        Match(src_ip=Ternary.exact(BASE + i, 32), dst_port=Ternary.exact(1000 + i % 60000, 16)), Action(1, i % 4, 0)
    )


def ir_of(rules: list[Rule]) -> RuleIR:
    return RuleIR(lanes=4, paths=8, rules=tuple(rules), slices=(SliceEntry(1, 10, "s1", 1, None, (0, 1, 2, 3)),))


def placed(rules: list[Rule], held: dict[positions.Signature, list[int]] | None = None) -> list[int]:
    return positions.rule_positions(lower_tables(ir_of(rules), "v", CAP, held))


# ---- pure ------------------------------------------------------------------------------


def test_fresh_numbering_leaves_gaps_and_fills_the_width() -> None:
    assert placed([rule(i) for i in range(5)]) == [3, 7, 11, 15, 19]
    for n in (256, 257, 600, layout.MAX_RULES):  # beyond width / GAP the gaps shrink, none is refused
        got = placed([rule(i) for i in range(n)])
        assert len(got) == n and got == sorted(set(got)) and got[-1] < layout.MAX_RULES


def test_kept_positions_and_new_rules_in_the_gap() -> None:
    rules = [rule(i) for i in range(10)]
    tables = lower_tables(ir_of(rules), "v", CAP)
    held = positions.held(tables)
    before = positions.rule_positions(tables)
    after = placed([*rules[:5], rule(100), *rules[5:]], held)
    assert after[:5] == before[:5] and after[6:] == before[5:]
    assert before[4] < after[5] < before[5]
    assert placed(rules[:3] + rules[4:], held) == before[:3] + before[4:]  # a removal moves nobody
    # another action keeps the position (the signature is the match)
    changed = [Rule(r.match, Action(1, 3 - r.action.lane, 0)) for r in rules]
    assert placed(changed, held) == before
    # a rule moved to the top: only it takes a new position
    moved = placed([rules[7], *rules[:7], *rules[8:]], held)
    assert moved[1:] == before[:7] + before[8:] and moved[0] < before[0]


def test_no_gap_left_moves_the_nearest_neighbours_only() -> None:
    dense = {positions.signatures(lower_tables(ir_of([rule(i)]), "v", CAP))[0]: [i] for i in range(100)}
    got = placed([rule(i) for i in range(50)] + [rule(500)] + [rule(i) for i in range(50, 100)], dense)
    assert got == sorted(set(got))
    moved = sum(1 for i, p in enumerate(got[:50] + got[51:]) if p != i)
    assert 0 < moved <= 60  # the run from the insertion point to the free slots after position 99


def test_signatures_do_not_depend_on_the_other_rules() -> None:
    wide = Rule(Match(src_ip=Ternary.prefix(BASE, 24, 32), vni=Ternary(0, 0), dscp=Ternary(8, 0x38)), Action(1, 0, 0))
    alone = positions.signatures(lower_tables(ir_of([wide]), "v", CAP))
    crowded = positions.signatures(lower_tables(ir_of([rule(1), wide, rule(2), rule(3)]), "v", CAP))
    assert crowded[1] == alone[0]
    assert len(set(crowded)) == 4


# ---- kernel ----------------------------------------------------------------------------


class Writes:
    def __init__(self) -> None:
        self.slots = 0

    def __call__(self, e: ProgressEvent) -> None:
        if e.phase == "write":
            self.slots = e.done


def push(d: Driver, rules: list[Rule]) -> int:
    w = Writes()
    d.apply(d.lower(ir_of(rules)), w)
    return w.slots


def fill_both(d: Driver, rules: list[Rule]) -> None:
    """``rules`` live; the idle copy (which the next push writes) one action apart from it,
    so the next push writes its own change + 1 action slot."""
    push(d, rules)
    push(d, [Rule(rules[0].match, Action(1, 3, 0)), *rules[1:]])
    push(d, rules)


def one_rule_writes(n: int) -> tuple[int, int]:
    """Slots written for a rule added in the middle, then for another removed from the
    middle, of an ``n``-rule table freshly numbered in a data plane of its own."""
    d = Driver({"lanes": 4, "paths": 8, "overload_poll_s": 0, "lane_cpus": dict.fromkeys(range(4), 0)})
    try:
        rng = random.Random(n)
        rules = [rule(i) for i in range(n)]
        fill_both(d, rules)
        added = [*rules[: n // 2], rule(n + 1 + rng.randrange(1000)), *rules[n // 2 :]]
        add = push(d, added)
        removed = added[: n // 2 + 3] + added[n // 2 + 4 :]
        return add, push(d, removed)  # the idle copy held ``rules``: both changes
    finally:
        d.close()


@pytest.mark.needs_root
def test_one_rule_added_or_removed_writes_a_bound_independent_of_the_table() -> None:
    small, large = one_rule_writes(50), one_rule_writes(500)
    print(f"\nslots written, add / remove in the middle: 50 rules {small}, 500 rules {large}")
    # a rule's own slots: its address, its port, its action, the wildcard sets it is in
    # (dscp_any and six tunnel sets) and meta -- 12 (dense numbering: every rule below moved,
    # each rewritten in every slot it is in)
    assert small[0] == large[0] <= 16
    assert small[1] == large[1] <= 2 * 16


@pytest.fixture
def pinned() -> Iterator[str]:
    name = f"test-positions-{os.getpid()}"
    yield name
    Driver({"pin_name": name, "overload_poll_s": 0}).teardown()


@pytest.mark.needs_root
def test_a_new_driver_process_keeps_the_positions_the_pinned_maps_hold(pinned: str) -> None:
    opts = {"pin_name": pinned, "overload_poll_s": 0, "lanes": 4, "paths": 8}
    rules = [rule(i) for i in range(300)]
    first = Driver(opts)
    fill_both(first, rules)
    held = positions.rule_positions(first.read_state().tables)
    first.close()  # the maps stay pinned; nothing of the first driver's memory survives
    second = Driver(opts)
    try:
        plan = second.lower(ir_of([*rules[:150], rule(999), *rules[150:]]))
        got = positions.rule_positions(plan.tables)
        assert got[:150] == held[:150] and got[151:] == held[150:]
        w = Writes()
        second.apply(plan, w)
        assert 0 < w.slots <= 16  # as in the first process: the rule's own slots
    finally:
        second.close()
