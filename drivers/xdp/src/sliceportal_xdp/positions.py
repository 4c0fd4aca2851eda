"""Stable rule positions (issue #14 item 4): a rule keeps its bit index across versions.

In the bit-vector classifier a rule's position (its bit in every field's rule sets, its
``actions`` slot) *is* its priority: the lowest set bit wins. Numbering rules densely
would move every rule below an added or removed one, and moving a rule rewrites every
slot its match covers (a /24 rule is in the entry of every longer prefix under it, a
DSCP class in 8 ``dscp`` slots, every rule in some ``special`` sets). So
positions rise along the IR's order with gaps between them, and lowering keeps the
positions the data plane holds:

* a rule is recognised by its *signature*: per field, the set of values that select it
  (merged intervals, or "any" for a wildcard; for a tunnel field "any present value" or
  its exact values, and whether a packet without the header matches). That is a function of the rule's own
  match, whatever else the table holds, and it is read from the tables alone, so the
  positions the kernel's maps hold are known after a restart too (``held``);
* the rules whose held positions still rise along the new order keep them (a longest
  rising run); a new or re-ranked rule takes a free position in the gap between its kept
  neighbours; only where a gap is too small are kept neighbours moved too, one at a time
  from the side with the wider gap beyond, until the run fits;
* a fresh numbering leaves ``GAP - 1`` free slots before and between rules while the
  width allows, and spreads rules evenly once ``GAP`` x rules exceeds it: gaps shrink as
  the table fills, and every count up to the width (``capabilities().capacity["rules"]``)
  still fits. Wider gaps cost classification time: the program ANDs ``meta.words`` =
  ceil((highest position + 1) / 64) words on a miss.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence

from sliceportal.drivers.contract import CapacityError, NativeEntry
from sliceportal.drivers.stable import longest_rising
from sliceportal.rules.equivalence import merged

Tables = dict[str, list[NativeEntry]]
Signature = tuple[Hashable, ...]

GAP = 4  # a fresh numbering's step: 3 free slots before and between rules


def rule_positions(tables: Mapping[str, list[NativeEntry]]) -> list[int]:
    """The positions of the rules in IR order (``actions`` lists them rising)."""
    return [int(a["rule"]) for a in tables["actions"]]


def _spans(entries: Sequence[tuple[int, int, Sequence[int]]]) -> dict[int, tuple[tuple[int, int], ...]]:
    per: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for lo, hi, rules in entries:
        for r in rules:
            per[r].append((lo, hi))
    return {r: tuple(merged(s)) for r, s in per.items()}


def signatures(tables: Mapping[str, list[NativeEntry]]) -> list[Signature]:
    """Per rule (IR order), the values of each field that select it; equal for equal
    matches whichever other rules share the tables."""
    fields: list[dict[int, Hashable]] = []
    # tables of an older build (an agent not yet upgraded) lack the *_any sets
    special: dict[str, set[int]] = defaultdict(set, {e["slot"]: set(e["rules"]) for e in tables["special"]})
    for f in ("src_ip", "dst_ip"):
        ranges = []
        for e in tables[f]:
            net = ipaddress.IPv4Network(e["prefix"])
            lo = int(net.network_address)
            ranges.append((lo, lo + net.num_addresses - 1, e["rules"]))
        # a prefix's entry also lists the rules of the shorter prefixes covering it: the
        # union of the ranges is the rule's own prefix (or prefixes)
        fields.append(dict(_spans(ranges)) | dict.fromkeys(special[f"{f}_any"], "any"))
    for f in ("dst_port", "dscp"):
        spans = _spans([(e["first"], e["last"], e["rules"]) for e in tables[f]])
        fields.append(dict(spans) | dict.fromkeys(special[f"{f}_any"], "any"))
    for f in ("vni", "teid", "vlan"):
        present, absent = special[f"{f}_present"], special[f"{f}_absent"]
        values: dict[int, list[int]] = defaultdict(list)
        for e in tables[f]:
            for r in e["rules"]:
                values[r].append(int(e["value"]))
        fields.append(
            {r: (r in absent, r in present, tuple(values.get(r, ()))) for r in present | absent | set(values)}
        )
    return [tuple(f.get(p) for f in fields) for p in rule_positions(tables)]


def held(tables: Mapping[str, list[NativeEntry]] | None) -> dict[Signature, list[int]]:
    """Signature -> the positions holding it (rising; equal matches can repeat)."""
    out: dict[Signature, list[int]] = defaultdict(list)
    if tables:
        for sig, pos in zip(signatures(tables), rule_positions(tables), strict=True):
            out[sig].append(pos)
    return dict(out)


def _longest_rising(pairs: Sequence[tuple[int, int]]) -> set[int]:
    """Indices (first of each pair) of a longest run whose positions strictly rise."""
    return {pairs[i][0] for i in longest_rising([pos for _, pos in pairs])}


def _spread(n: int, lo: int, hi: int, width: int) -> list[int] | None:
    """``n`` rising positions strictly between ``lo`` and ``hi`` (-1 / ``width``: open), or
    None if they do not fit. Against an open end GAP apart (a fresh table: GAP - 1 free
    slots first); else evenly (insertions at one spot halve the gap)."""
    if hi - lo - 1 < n:
        return None
    if lo == -1 and hi == width and GAP * n <= width:
        return [GAP - 1 + GAP * t for t in range(n)]
    if hi == width and lo + GAP * n < width:
        return [lo + GAP * (t + 1) for t in range(n)]
    if lo == -1 and hi < width and hi - GAP * n >= 0:
        return [hi - GAP * (n - t) for t in range(n)]
    return [lo + (hi - lo) * (t + 1) // (n + 1) for t in range(n)]


def _widen(out: list[int | None], start: int, end: int, width: int) -> tuple[int, int]:
    """The run [start, end) plus one kept neighbour: on the side whose next gap is wider
    (free slots may lie on one side only: a dense stretch is crossed, not renumbered from
    both ends), the upper side on a tie."""
    n = len(out)

    def room_above() -> int:  # free slots gained by taking out[end] into the run
        j = end + 1
        while j < n and out[j] is None:
            j += 1
        top, here = out[j] if j < n else width, out[end]
        assert top is not None and here is not None
        return top - here - 1 - (j - end - 1)

    def room_below() -> int:  # ... by taking out[start - 1]
        low, here = out[start - 2] if start >= 2 else -1, out[start - 1]
        assert low is not None and here is not None
        return here - low - 1

    if end < n and (start == 0 or room_above() >= room_below()):
        end += 1
        while end < n and out[end] is None:  # the next run, not placed yet, joins too
            end += 1
    else:
        start -= 1
    return start, end


def assign(sigs: Sequence[Signature], have: Mapping[Signature, list[int]], width: int) -> list[int]:
    """Rising positions in 0 .. width - 1 for rules with signatures ``sigs`` (IR order),
    keeping ``have`` (what the data plane holds) for as many as keep their rank."""
    n = len(sigs)
    if n > width:
        raise CapacityError("rules", n, width)
    taken: dict[Signature, int] = defaultdict(int)
    pairs = []
    for i, s in enumerate(sigs):
        ps = have.get(s)
        if ps and taken[s] < len(ps):  # equal matches: the k-th takes the k-th held position
            pos = ps[taken[s]]
            taken[s] += 1
            if 0 <= pos < width:
                pairs.append((i, pos))
    pos_of = dict(pairs)
    out: list[int | None] = [None] * n
    for i in _longest_rising(pairs):
        out[i] = pos_of[i]
    i = 0
    while i < n:
        if out[i] is not None:
            i += 1
            continue
        start = end = i
        while end < n and out[end] is None:
            end += 1
        while True:  # the run [start, end) between kept neighbours, widened until it fits
            lo = out[start - 1] if start > 0 else -1
            hi = out[end] if end < n else width
            assert lo is not None and hi is not None
            got = _spread(end - start, lo, hi, width)
            if got is not None:
                break
            start, end = _widen(out, start, end, width)
        out[start:end] = got
        i = end
    return [p for p in out if p is not None]


def place(tables: Tables, positions: Sequence[int]) -> Tables:
    """``tables`` lowered with rule i at bit i, moved to bit ``positions[i]`` (rising, so
    every sorted rule list stays sorted)."""
    pos = list(positions)
    out: Tables = {}
    for name, entries in tables.items():
        if name in ("qos", "meta"):
            out[name] = entries
        elif name == "actions":
            out[name] = [{**a, "rule": pos[int(a["rule"])]} for a in entries]
        else:
            out[name] = [{**e, "rules": [pos[r] for r in e["rules"]]} for e in entries]
    out["meta"] = [{**tables["meta"][0], "slots": pos[-1] + 1 if pos else 0}]
    return out
