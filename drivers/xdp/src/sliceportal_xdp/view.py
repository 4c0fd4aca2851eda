"""The XDP classifier's tables as a ternary view (issue #20 item 4), so the preview can
prove them equal to the IR exactly, not by sampling.

The data plane is a bit-vector classifier (``lowering``): per field, the packet's value
selects one region of that field's table (longest prefix, array run, tunnel value or the
"present" / "absent" slot) and with it a rule set; rule i is hit when i is in the set of
every field, and the lowest such i wins. So rule i matches exactly the product over the
fields of S_f(i), the values whose region holds i. This module reads the tables the
driver would write, turns each field's table into its partition of the field's values
(disjoint intervals, each with its rule set), collects S_f(i) as merged intervals, splits
each interval into aligned blocks (value/mask), and emits rule i at priority -i as one
entry: the fields with a single block in its value/mask, the others as unions of blocks
(``TernaryEntry.any_of``), so nothing is multiplied out across fields. Nothing here looks
at the IR.

Tunnel fields are keyed with their "present" bit above the value (``has_vni:vni``), one
combined field of 1 + width bits: "absent" is the lower half, present values the upper.
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Sequence

from sliceportal.drivers.contract import NativeEntry, NativePlan
from sliceportal.rules.equivalence import (
    Algorithm1,
    Outcome,
    TernaryEntry,
    TernaryView,
    ViewTooLargeError,
    interval_cubes,
    ir_space,
    merged,
)

from .lowering import TUNNEL_FIELDS, TUNNEL_WIDTHS
from .positions import rule_positions

KEY_SPACE = ir_space(("src_ip", "dst_ip", "dscp", "dst_port", *TUNNEL_FIELDS))
MAX_ENTRIES = 200_000  # value/mask blocks the expansion may produce before it gives up

Segment = tuple[int, int, Sequence[int]]  # inclusive interval of a field's values, its rule set


def lpm_segments(entries: Sequence[NativeEntry], width: int = 32) -> list[Segment]:
    """The longest-prefix-match partition of ``0 .. 2^width - 1``: each address falls in the
    segment of the longest prefix holding it (no prefix: the empty set, nothing matches)."""
    prefixes = []
    for e in entries:
        net = ipaddress.IPv4Network(e["prefix"])
        lo = int(net.network_address)
        prefixes.append((lo, lo + net.num_addresses - 1, e["rules"]))
    prefixes.sort(key=lambda p: (p[0], -p[1]))  # outer prefix before the ones nested in it
    out: list[Segment] = []
    stack: list[tuple[int, Sequence[int]]] = []  # open prefixes: (last address, rules)
    pos = 0
    for lo, hi, rules in prefixes:
        while stack and stack[-1][0] < lo:
            end, r = stack.pop()
            if pos <= end:
                out.append((pos, end, r))
            pos = max(pos, end + 1)
        if pos < lo:
            out.append((pos, lo - 1, stack[-1][1] if stack else ()))
        pos = lo
        stack.append((hi, rules))
    while stack:
        end, r = stack.pop()
        if pos <= end:
            out.append((pos, end, r))
        pos = max(pos, end + 1)
    if pos < 1 << width:
        out.append((pos, (1 << width) - 1, ()))
    return out


def run_segments(entries: Sequence[NativeEntry]) -> list[Segment]:
    """The run-length encoded arrays (dst_port, dscp) are their own partition."""
    return [(e["first"], e["last"], e["rules"]) for e in entries]


def tunnel_segments(
    entries: Sequence[NativeEntry], present: Sequence[int], absent: Sequence[int], width: int
) -> list[Segment]:
    """Over ``has:value`` (1 + width bits): absent, then each listed value (its exact rules
    and the "present" ones, which the program ORs onto a hit) and the gaps between."""
    base = 1 << width
    out: list[Segment] = [(0, base - 1, absent)]
    pos = base
    for e in sorted(entries, key=lambda e: int(e["value"])):
        v = base + int(e["value"])
        if pos < v:
            out.append((pos, v - 1, present))
        out.append((v, v, sorted({*e["rules"], *present})))
        pos = v + 1
    if pos < 2 * base:
        out.append((pos, 2 * base - 1, present))
    return out


def _per_rule(
    segments: Sequence[Segment], width: int, shift: int, order: Sequence[int], wild: Sequence[int] = ()
) -> list[list[tuple[int, int]]]:
    """For each rule (IR order; ``order``: their positions): the blocks (value, mask),
    placed at ``shift`` in the packed key, of S_f(i); ``wild``: the field's ``*_any`` set,
    rules every value selects."""
    spans: dict[int, list[tuple[int, int]]] = defaultdict(list)
    for lo, hi, rules in segments:
        for r in rules:
            spans[r].append((lo, hi))
    for r in wild:
        spans[r].append((0, (1 << width) - 1))
    out: list[list[tuple[int, int]]] = []
    for p in order:
        out.append(
            [(v << shift, m << shift) for lo, hi in merged(spans.get(p, ())) for v, m in interval_cubes(lo, hi, width)]
        )
    return out


def _miss(meta: NativeEntry) -> Outcome:
    if meta["miss_mode"] == "algorithm1":
        return Algorithm1(int(meta["lanes"]), int(meta["paths"]))
    return (0, int(meta["miss_lane"]), int(meta["miss_path"]))


def xdp_view(plan: NativePlan, max_entries: int = MAX_ENTRIES) -> TernaryView:
    t = plan.tables
    order = rule_positions(t)  # rising along the IR order: the lowest set bit wins
    n = len(order)
    offsets = KEY_SPACE.offsets()
    special = defaultdict(list, {e["slot"]: e["rules"] for e in t["special"]})  # older plans: no *_any
    fields: list[list[list[tuple[int, int]]]] = [
        _per_rule(lpm_segments(t[f]), 32, offsets[f][0], order, special[f"{f}_any"]) for f in ("src_ip", "dst_ip")
    ]
    fields += [
        _per_rule(run_segments(t[f]), w, offsets[f][0], order, special[f"{f}_any"])
        for f, w in (("dscp", 6), ("dst_port", 16))
    ]
    for f in TUNNEL_FIELDS:
        w = TUNNEL_WIDTHS[f]
        segs = tunnel_segments(t[f], special[f"{f}_present"], special[f"{f}_absent"], w)
        fields.append(_per_rule(segs, w + 1, offsets[f][0], order))
    actions = [(int(a["slice_id"]), int(a["lane"]), int(a["rr_path"])) for a in t["actions"]]
    entries: list[TernaryEntry] = []
    blocks_total = 0
    for i in range(n):
        if any(not per_rule[i] for per_rule in fields):
            continue  # a field in which no value selects rule i: it never matches
        # a field whose values for rule i form one block is part of the entry's value/mask;
        # the others stay unions (any_of), so nothing is multiplied out across fields
        value = mask = 0
        groups: list[tuple[tuple[int, int], ...]] = []
        for per_rule in fields:
            if len(per_rule[i]) == 1:
                value, mask = value | per_rule[i][0][0], mask | per_rule[i][0][1]
            else:
                groups.append(tuple(per_rule[i]))
        blocks_total += sum(len(g) for g in groups) + 1
        if blocks_total > max_entries:
            raise ViewTooLargeError(f"the XDP tables expand into more than {max_entries} value/mask blocks")
        entries.append(TernaryEntry(value, mask, -i, actions[i], tuple(groups)))
    (meta,) = t["meta"]
    return TernaryView(KEY_SPACE, tuple(entries), _miss(meta), source="XDP map")
