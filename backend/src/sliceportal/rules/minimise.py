"""Ternary minimisation: fewer TCAM entries that match exactly the same packets.

Every function here is *exact*: its output covers precisely the key set its input covers,
never a key more (see docs/rules.md, "the no-over-cover rule"). Three steps:

* sets of integers (UE addresses, ports, DSCP values) become disjoint intervals, then the
  fewest prefixes per interval (the greedy range-to-prefix split is optimal per interval);
* disjoint ternaries with the same mask whose values differ in one cared bit are merged
  into one with that bit cleared (a Quine-McCluskey step; the union of two disjoint
  halves is exactly the merged entry), repeated until nothing merges;
* rule-level: the same step applied field by field to whole rules with identical actions
  (``merge_rectangles``), which merges e.g. two services of one lane that differ in DSCP.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence

from sliceportal.rules.ir import Ternary

Interval = tuple[int, int]  # inclusive


def merge_intervals(intervals: Iterable[Interval]) -> list[Interval]:
    """Sorted, disjoint, non-adjacent intervals covering the same integers."""
    out: list[Interval] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            if hi > out[-1][1]:
                out[-1] = (out[-1][0], hi)
        else:
            out.append((lo, hi))
    return out


def intersect_intervals(a: Sequence[Interval], b: Sequence[Interval]) -> bool:
    """Whether two sorted disjoint interval lists share an integer."""
    i = j = 0
    while i < len(a) and j < len(b):
        if a[i][1] < b[j][0]:
            i += 1
        elif b[j][1] < a[i][0]:
            j += 1
        else:
            return True
    return False


def range_to_prefixes(lo: int, hi: int, width: int) -> list[Ternary]:
    """The fewest prefixes covering exactly ``lo..hi`` (greedy: largest aligned block first)."""
    out: list[Ternary] = []
    while lo <= hi:
        size = lo & -lo if lo else 1 << width
        while size > hi - lo + 1:
            size >>= 1
        out.append(Ternary.prefix(lo, width - (size.bit_length() - 1), width))
        lo += size
    return out


def intervals_to_prefixes(intervals: Iterable[Interval], width: int) -> list[Ternary]:
    out: list[Ternary] = []
    for lo, hi in merge_intervals(intervals):
        out.extend(range_to_prefixes(lo, hi, width))
    return out


def merge_disjoint(ternaries: Iterable[Ternary], width: int) -> list[Ternary]:
    """Merge pairwise-disjoint ternaries that differ in one cared bit, until none do.

    The input must be pairwise disjoint (e.g. the prefixes of disjoint intervals); the
    output then is too, and covers exactly the same keys.
    """
    current = set(ternaries)
    while True:
        merged: set[Ternary] = set()
        used: set[Ternary] = set()
        # Deterministic order so the same input always yields the same entries.
        for t in sorted(current, key=lambda t: (t.mask, t.value)):
            if t in used:
                continue
            for bit in range(width):
                b = 1 << bit
                if not t.mask & b:
                    continue
                partner = Ternary(t.value ^ b, t.mask)
                if partner in current and partner not in used:
                    used.add(t)
                    used.add(partner)
                    merged.add(Ternary(t.value & ~b, t.mask & ~b))
                    break
        if not used:
            return sorted(current, key=lambda t: (t.value, -t.mask))
        current = (current - used) | merged


def minimise_set(intervals: Iterable[Interval], width: int) -> list[Ternary]:
    """Fewest ternaries we find for a set of integers given as (possibly overlapping) intervals."""
    return merge_disjoint(intervals_to_prefixes(intervals, width), width)


def values_to_intervals(values: Iterable[int]) -> list[Interval]:
    return merge_intervals((v, v) for v in values)


# A rule body for rule-level merging: one ternary per field, None = wildcard.
Rectangle = tuple[Ternary | None, ...]


def _as_ternary(t: Ternary | None) -> Ternary:
    return t if t is not None else Ternary(0, 0)


def contains(outer: Rectangle, inner: Rectangle) -> bool:
    """Whether every key ``inner`` matches is matched by ``outer``."""
    for o, i in zip(outer, inner, strict=True):
        if o is None:
            continue
        if i is None or o.mask & ~i.mask or i.value & o.mask != o.value:
            return False
    return True


def prune_contained(rects: Sequence[Rectangle]) -> list[Rectangle]:
    """Drop rules another rule of the same action contains (same keys, one entry fewer)."""
    out: list[Rectangle] = []
    for i, r in enumerate(rects):
        if any(j != i and contains(o, r) and (not contains(r, o) or j < i) for j, o in enumerate(rects)):
            continue
        out.append(r)
    return out


def merge_rectangles(rects: Iterable[Rectangle], widths: Sequence[int]) -> list[Rectangle]:
    """Rule-level merging of rules that share one action.

    Two rules equal in every field but one, where that field's ternaries have one mask
    and differ in one cared bit, are replaced by one rule with that bit wildcarded: the
    merged rule matches exactly the keys of the two, so the union never grows.
    """
    current = {tuple(_as_ternary(t) for t in r) for r in rects}
    while True:
        used: set[tuple[Ternary, ...]] = set()
        merged: set[tuple[Ternary, ...]] = set()
        for r in sorted(current, key=lambda r: tuple((t.mask, t.value) for t in r)):
            if r in used:
                continue
            for fi, width in enumerate(widths):
                t = r[fi]
                hit = False
                for bit in range(width):
                    b = 1 << bit
                    if not t.mask & b:
                        continue
                    partner = (*r[:fi], Ternary(t.value ^ b, t.mask), *r[fi + 1 :])
                    if partner in current and partner not in used:
                        used.add(r)
                        used.add(partner)
                        merged.add((*r[:fi], Ternary(t.value & ~b, t.mask & ~b), *r[fi + 1 :]))
                        hit = True
                        break
                if hit:
                    break
        if not used:
            break
        current = (current - used) | merged
    return sorted(
        (tuple(None if t.mask == 0 else t for t in r) for r in current),
        key=lambda r: tuple((t.value, -t.mask) if t else (-1, 0) for t in r),
    )
