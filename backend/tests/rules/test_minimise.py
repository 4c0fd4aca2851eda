"""The minimisation primitives cover exactly their input set (exhaustive on small widths)."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sliceportal.rules.ir import Ternary
from sliceportal.rules.minimise import (
    merge_disjoint,
    merge_intervals,
    merge_rectangles,
    minimise_set,
    range_to_prefixes,
)

W = 8  # small width: every key is enumerated


def covered(ts: list[Ternary], width: int = W) -> set[int]:
    return {k for k in range(1 << width) if any(t.matches(k) for t in ts)}


def pairwise_disjoint(ts: list[Ternary], width: int = W) -> bool:
    seen: set[int] = set()
    for t in ts:
        keys = covered([t], width)
        if keys & seen:
            return False
        seen |= keys
    return True


@given(st.integers(0, 255), st.integers(0, 255))
def test_range_to_prefixes_is_exact_and_prefix_only(a: int, b: int) -> None:
    lo, hi = min(a, b), max(a, b)
    ts = range_to_prefixes(lo, hi, W)
    assert covered(ts) == set(range(lo, hi + 1))
    assert all(t.prefix_len(W) is not None for t in ts)
    assert pairwise_disjoint(ts)


def test_full_range_is_one_wildcard_prefix() -> None:
    assert range_to_prefixes(0, 0xFFFF, 16) == [Ternary(0, 0)]


def test_classic_worst_case_range_needs_2w_minus_2_prefixes() -> None:
    # [1, 2^w - 2] is the textbook worst case of range-to-prefix expansion.
    assert len(range_to_prefixes(1, 254, W)) == 2 * W - 2


@given(st.lists(st.tuples(st.integers(0, 255), st.integers(0, 40)), max_size=12))
def test_minimise_set_is_exact_and_disjoint(spans: list[tuple[int, int]]) -> None:
    intervals = [(lo, min(255, lo + n)) for lo, n in spans]
    expected = {k for lo, hi in intervals for k in range(lo, hi + 1)}
    ts = minimise_set(intervals, W)
    assert covered(ts) == expected
    assert pairwise_disjoint(ts)
    assert len(ts) <= sum(len(range_to_prefixes(lo, hi, W)) for lo, hi in merge_intervals(intervals))


def test_table2_port_group_is_one_entry() -> None:
    ts = minimise_set([(p, p) for p in (5000, 5002, 5004, 5006)], 16)
    assert ts == [Ternary(5000, 0xFFF9)]


@settings(max_examples=60)
@given(st.sets(st.integers(0, 63), max_size=40))
def test_merge_disjoint_on_exact_values(values: set[int]) -> None:
    ts = merge_disjoint([Ternary.exact(v, 6) for v in values], 6)
    assert covered(ts, 6) == values
    assert len(ts) <= len(values)


@settings(max_examples=60)
@given(st.sets(st.tuples(st.integers(0, 15), st.integers(0, 7)), max_size=40))
def test_merge_rectangles_is_exact(points: set[tuple[int, int]]) -> None:
    rects = [(Ternary.exact(a, 4), Ternary.exact(b, 3)) for a, b in points]
    merged = merge_rectangles(rects, (4, 3))

    def hit(r: tuple[Ternary | None, ...], a: int, b: int) -> bool:
        return all(t is None or t.matches(k) for t, k in zip(r, (a, b), strict=True))

    got = {(a, b) for a in range(16) for b in range(8) if any(hit(r, a, b) for r in merged)}
    assert got == points
    assert len(merged) <= len(points)


def test_merge_rectangles_merges_across_fields() -> None:
    # Two services of one lane: port 5000 with DSCP 0 and with DSCP 1 -> one rule, DSCP 0/1.
    rects = [(Ternary.exact(5000, 16), Ternary.exact(0, 6)), (Ternary.exact(5000, 16), Ternary.exact(1, 6))]
    assert merge_rectangles(rects, (16, 6)) == [(Ternary.exact(5000, 16), Ternary(0, 0x3E))]
