"""The equivalence engine (rules/equivalence.py): the walk decides exactly what enumeration
decides, and ``check`` turns views into proven / differs (with a key that really differs) /
unchecked (with the reason)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sliceportal.rules.equivalence import (
    Algorithm1,
    EquivalenceVerdict,
    Space,
    TernaryEntry,
    TernaryView,
    check,
    interval_cubes,
    ir_space,
    walk,
)
from sliceportal.rules.ir import Action, FlowKey, Match, MissMode, MissPolicy, Rule, RuleIR, SliceEntry, Ternary

# ---- the walk against brute force on a 7-bit space --------------------------------------------

WIDTH = 7
cubes = st.tuples(st.integers(0, 127), st.integers(0, 127)).map(lambda t: (t[0] & t[1], t[1]))
# a rule: a cube and (sometimes) groups of blocks the key must also meet one of each
Rule7 = tuple[int, int, tuple[tuple[tuple[int, int], ...], ...], tuple[int]]
groups = st.lists(st.lists(cubes, max_size=3).map(tuple), max_size=2).map(tuple)
rule_lists = st.lists(st.tuples(cubes, groups, st.integers(0, 2)), max_size=6).map(
    lambda rs: [(v, m, g, (d,)) for (v, m), g, d in rs]
)


def brute(rules: list[Rule7], default: tuple[int], key: int) -> tuple[int]:
    return next(
        (d for v, m, g, d in rules if key & m == v and all(any(key & bm == bv for bv, bm in blocks) for blocks in g)),
        default,
    )


@settings(max_examples=400, deadline=None)
@given(a=rule_lists, b=rule_lists, da=st.integers(0, 2), db=st.integers(0, 2))
def test_the_walk_decides_exactly_what_enumeration_decides(a: list[Rule7], b: list[Rule7], da: int, db: int) -> None:
    _, diff = walk(WIDTH, a, (da,), b, (db,))
    same = all(brute(a, (da,), k) == brute(b, (db,), k) for k in range(1 << WIDTH))
    assert (diff is None) == same
    if diff is not None:
        key, got_a, got_b = diff
        assert got_a == brute(a, (da,), key) != brute(b, (db,), key) == got_b


@given(st.integers(0, 255), st.integers(0, 255))
def test_interval_blocks_cover_exactly_the_interval(x: int, y: int) -> None:
    lo, hi = min(x, y), max(x, y)
    covered = [k for k in range(256) if any(k & m == v for v, m in interval_cubes(lo, hi, 8))]
    assert covered == list(range(lo, hi + 1))


# ---- check() ----------------------------------------------------------------------------------

PORTS = Space((("dst_port", 16),))


def one_rule_ir(ports: Ternary, miss: MissPolicy | None = None) -> RuleIR:
    return RuleIR(
        lanes=4,
        paths=1,
        rules=(Rule(Match(dst_port=ports), Action(1, 3, 0)),),
        slices=(SliceEntry(1, 1, "s", 100, None, (3,)),),
        miss=miss or MissPolicy(),
    )


ALG1 = Algorithm1(4, 1)


def port_view(entries: list[tuple[int, int]], default: tuple[int, ...] | Algorithm1 = ALG1) -> TernaryView:
    return TernaryView(
        PORTS, tuple(TernaryEntry(v, m, -i, (1, 3, 0)) for i, (v, m) in enumerate(entries)), default, source="test"
    )


def test_a_faithful_view_is_proven_with_method_entries_and_time() -> None:
    ir = one_rule_ir(Ternary(5000 & 0xFFF0, 0xFFF0))  # 4992..5007
    r = check(ir, port_view([(4992, 0xFFF8), (5000, 0xFFF8)]))  # the same block as two halves
    assert r.verdict is EquivalenceVerdict.PROVEN and r.counterexample is None
    assert r.checked_entries == 2 and r.cubes > 0 and r.elapsed_ms >= 0 and "exact" in r.method


def test_a_view_one_port_too_wide_differs_at_that_port() -> None:
    ir = one_rule_ir(Ternary(4992, 0xFFF0))
    r = check(ir, port_view([(4992, 0xFFE0)]))  # 4992..5023
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    port = r.counterexample.key["dst_port"]
    assert 5008 <= port <= 5023  # a key only the wide entry holds
    assert ir.classify(FlowKey(0, 0, port, 0)).rule_index is None
    assert r.counterexample.ir.startswith("miss") and r.counterexample.plane == "slice 1, lane 3, rr path 0"


def test_a_wrong_miss_policy_differs() -> None:
    ir = one_rule_ir(Ternary(4992, 0xFFF0), MissPolicy(MissMode.FIXED, lane=2))
    assert check(ir, port_view([(4992, 0xFFF0)], (0, 2, 0))).verdict is EquivalenceVerdict.PROVEN
    r = check(ir, port_view([(4992, 0xFFF0)], (0, 1, 0)))
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    assert r.counterexample.ir == "miss: lane 2, rr path 0" and r.counterexample.plane == "miss: lane 1, rr path 0"


def test_a_field_the_view_cannot_see_is_found() -> None:
    """The IR keys on DSCP, the view has no DSCP field: keys with another DSCP differ."""
    ir = RuleIR(
        lanes=4, paths=1, rules=(Rule(Match(dst_port=Ternary(4992, 0xFFF0), dscp=Ternary(46, 63)), Action(1, 3, 0)),)
    )
    r = check(ir, port_view([(4992, 0xFFF0)]))
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    assert r.counterexample.key["dscp"] != 46


def test_no_view_and_an_exhausted_budget_are_unchecked_with_the_reason() -> None:
    ir = one_rule_ir(Ternary(4992, 0xFFF0))
    r = check(ir, None, reason="the test driver gives no ternary view")
    assert r.verdict is EquivalenceVerdict.UNCHECKED and r.detail == "the test driver gives no ternary view"
    r = check(ir, port_view([(4992, 0xFFF0)]), max_cubes=3)
    assert r.verdict is EquivalenceVerdict.UNCHECKED and "budget" in r.detail and r.counterexample is None


def test_tunnel_fields_carry_their_present_bit() -> None:
    """A rule on VNI 100 never matches a packet without VXLAN: the IR side sets has_vni."""
    space = ir_space(("vni",))
    assert space.fields == (("has_vni", 1), ("vni", 24))
    ir = RuleIR(lanes=4, paths=1, rules=(Rule(Match(vni=Ternary.exact(100, 24)), Action(1, 0, 0)),))
    exact = TernaryView(
        space, (TernaryEntry(*space.pack({"has_vni": (1, 1), "vni": (100, 0xFFFFFF)}), 0, (1, 0, 0)),), Algorithm1(4, 1)
    )
    assert check(ir, exact).verdict is EquivalenceVerdict.PROVEN
    absent_too = TernaryView(
        space, (TernaryEntry(*space.pack({"vni": (100, 0xFFFFFF)}), 0, (1, 0, 0)),), Algorithm1(4, 1)
    )
    r = check(ir, absent_too)
    assert r.verdict is EquivalenceVerdict.DIFFERS and r.counterexample is not None
    assert r.counterexample.key == {"has_vni": 0, "vni": 100}
