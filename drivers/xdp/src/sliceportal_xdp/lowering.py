"""IR -> the XDP classifier's tables, in the normal form ``read_state`` reads back.

The data plane is a bit-vector classifier: every match field has one lookup structure
that maps a packet's value to the set of rules (a bitmap, bit i = rule i) whose ternary
on that field holds; the AND of the seven sets, lowest bit first, is the first matching
rule, exactly ``RuleIR.classify``. Per field:

* ``src_ip`` / ``dst_ip``: LPM tries. A ternary whose mask is a prefix is one trie entry;
  a mask with holes is expanded into its prefixes (at most ``MAX_EXPANSION``, else
  ``NonPrefixMaskError``). Each entry's set also holds every rule of every shorter prefix
  covering it, so the longest match is the whole answer (with the wildcards, below).
* ``dst_port`` (65 536 entries) and ``dscp`` (64): arrays, any mask.
* ``vni`` / ``teid`` / ``vlan``: hash maps of exact values (masks expanded as above; mask
  0 means "header present, any value") plus two sets per field for "header present" (ORed
  onto the map's hit, or alone on a miss) and "header absent" (only wildcard rules match
  packets without it).
* the wildcard rules of ``src_ip``, ``dst_ip``, ``dst_port`` and ``dscp`` (no ternary, or
  mask 0) are one set per field in ``special`` (``<field>_any``) that the program ORs
  onto the lookup's set, not a bit in every entry: a rule without a port is one slot, not
  65 536, so adding or removing it writes O(1) slots.

Tables are lists of JSON-able dicts; rule sets are sorted lists of rule *positions* (bit
indices: rising along the IR's order, with gaps, kept across versions -- ``positions``),
and the arrays are run-length encoded as ``{"first", "last", "rules"}``. ``actions`` lists
the rules in IR order with their positions; ``meta`` counts ``rules`` and ``slots``
(highest position + 1).
"""

from __future__ import annotations

import ipaddress
from collections import defaultdict
from collections.abc import Iterable, Iterator, Mapping

from sliceportal.drivers.contract import CapacityError, NativeEntry, UnsupportedMatchError
from sliceportal.rules.ir import FlowKey, MissMode, RuleIR, Ternary

from . import layout, positions
from .positions import Signature

MAX_EXPANSION = 256  # prefixes / values one non-prefix ternary may expand into
DEFAULT_BURST_MS = 10.0
MIN_BURST_BYTES = 2 * 1518  # a bucket shallower than a frame would never pass one
MAX_BURST_BYTES = 10**10  # tokens are kept in byte*1e9 units in a u64

TUNNEL_FIELDS = ("vni", "teid", "vlan")
TUNNEL_WIDTHS = {"vni": 24, "teid": 32, "vlan": 12}


class NonPrefixMaskError(UnsupportedMatchError):
    """A ternary mask with holes expands into more entries than we accept."""

    def __init__(self, field: str, rule: int, t: Ternary, needed: int) -> None:
        super().__init__(field, "xdp")
        self.message = (
            f"rule {rule}: the {field} mask {t.mask:#x} is not a prefix and would expand into "
            f"{needed} entries (at most {MAX_EXPANSION})"
        )
        self.args = (self.message,)
        self.hint = "use prefix masks for addresses and exact values or mask 0 for tunnel ids"


def rules_list(bits: int) -> list[int]:
    out = []
    while bits:  # one step per set bit, not per bit position
        low = bits & -bits
        out.append(low.bit_length() - 1)
        bits ^= low
    return out


def rules_bits(rules: Iterable[int]) -> int:
    bits = 0
    for r in rules:
        bits |= 1 << r
    return bits


def _hole_bits(mask: int, width: int) -> list[int]:
    """Bits above the mask's lowest set bit that the mask leaves open."""
    if mask == 0:
        return []
    low = (mask & -mask).bit_length() - 1
    return [b for b in range(low, width) if not mask >> b & 1]


def _expand(field: str, rule: int, t: Ternary, width: int) -> Iterator[tuple[int, int]]:
    """(value, prefix length) pairs whose union is exactly the ternary's match set."""
    holes = _hole_bits(t.mask, width)
    if 1 << len(holes) > MAX_EXPANSION:
        raise NonPrefixMaskError(field, rule, t, 1 << len(holes))
    plen = width - ((t.mask & -t.mask).bit_length() - 1) if t.mask else 0
    for combo in range(1 << len(holes)):
        v = t.value
        for i, b in enumerate(holes):
            if combo >> i & 1:
                v |= 1 << b
        yield v, plen


def _ip_table(ir: RuleIR, field: str) -> tuple[list[NativeEntry], int]:
    """The trie's entries and the wildcard rules."""
    wild = 0
    direct: dict[tuple[int, int], int] = defaultdict(int)
    for i, rule in enumerate(ir.rules):
        t: Ternary | None = getattr(rule.match, field)
        if t is None or t.mask == 0:  # every value: the field's ``*_any`` set
            wild |= 1 << i
            continue
        for v, plen in _expand(field, i, t, 32):
            direct[(v, plen)] |= 1 << i
    entries = []
    for (v, plen), _ in sorted(direct.items(), key=lambda kv: (kv[0][1], kv[0][0])):
        # the longest match must also answer for every covering shorter prefix
        bits = 0
        for anc in range(plen + 1):
            m = ((1 << anc) - 1) << (32 - anc) if anc else 0
            bits |= direct.get((v & m, anc), 0)
        entries.append({"prefix": f"{ipaddress.IPv4Address(v)}/{plen}", "rules": rules_list(bits)})
    return entries, wild


def rle(values: list[int]) -> list[NativeEntry]:
    out: list[NativeEntry] = []
    start = 0
    for i in range(1, len(values) + 1):
        if i == len(values) or values[i] != values[start]:
            out.append({"first": start, "last": i - 1, "rules": rules_list(values[start])})
            start = i
    return out


def _array_bits(ir: RuleIR, field: str, size: int) -> tuple[list[int], int]:
    """Per value, the rules whose ternary holds it (wildcards apart); and the wildcards."""
    by_ternary: dict[Ternary, int] = defaultdict(int)
    wild = 0
    for i, rule in enumerate(ir.rules):
        t: Ternary | None = getattr(rule.match, field)
        if t is None or t.mask == 0:  # every value: the field's ``*_any`` set
            wild |= 1 << i
        else:
            by_ternary[t] |= 1 << i
    values = [0] * size
    full = size - 1
    for t, bits in by_ternary.items():
        free = ~t.mask & full
        sub = 0
        while True:  # every x with x & mask == value: value | each subset of the free bits
            values[t.value | sub] |= bits
            if sub == free:
                break
            sub = (sub - free) & free
    return values, wild


def _tunnel_table(ir: RuleIR, field: str) -> tuple[list[NativeEntry], int, int]:
    """Exact-value entries, and the "present, not listed" / "absent" sets."""
    wild = anyval = 0
    exact: dict[int, int] = defaultdict(int)
    for i, rule in enumerate(ir.rules):
        t: Ternary | None = getattr(rule.match, field)
        if t is None:
            wild |= 1 << i
        elif t.mask == 0:
            anyval |= 1 << i
        else:
            holes = _hole_bits(t.mask, TUNNEL_WIDTHS[field])
            low = (t.mask & -t.mask).bit_length() - 1
            free_low = (1 << low) - 1
            n = (1 << len(holes)) * (1 << low)
            if n > MAX_EXPANSION:
                raise NonPrefixMaskError(field, i, t, n)
            for v, _ in _expand(field, i, t, TUNNEL_WIDTHS[field]):
                for lowbits in range(free_low + 1):
                    exact[v | lowbits] |= 1 << i
    # the program ORs the "present" set onto a hit: an entry holds its exact rules only
    entries = [{"value": v, "rules": rules_list(bits)} for v, bits in sorted(exact.items())]
    return entries, wild | anyval, wild


def ecn_threshold_ns(ecn_ms: float | None, rate_Bps: int, burst_bytes: int) -> int | None:
    """M_DELAY in ns as the program compares it (backlog > ecn_ns x rate, both in
    byte x 1e9 units), or None when nothing is marked: no ECN target, or a target the
    virtual queue never reaches (its delay stays below burst / rate), which also keeps
    the product inside a u64."""
    if ecn_ms is None:
        return None
    ecn_ns = max(0, round(ecn_ms * 1e6))
    if ecn_ns * rate_Bps >= burst_bytes * 10**9:
        return None
    return ecn_ns


def qos_entries(ir: RuleIR) -> list[NativeEntry]:
    out = []
    for s in sorted(ir.slices, key=lambda s: s.slice_id):
        if s.qos.rate_bps is None:
            continue
        rate_Bps = max(1, s.qos.rate_bps // 8)
        burst_ms = s.qos.burst_ms if s.qos.burst_ms is not None else DEFAULT_BURST_MS
        burst = min(MAX_BURST_BYTES, max(MIN_BURST_BYTES, int(rate_Bps * burst_ms / 1000)))
        if s.drops_all:
            # rate 0 (a drop intent's sub-slice): a bucket of no depth passes no frame, so the
            # program drops every frame of the slice and counts it (drop_rate, per rule)
            burst = 0
        out.append(
            {
                "slice_id": s.slice_id,
                "rate_Bps": rate_Bps,
                "burst_bytes": burst,
                "ecn_ns": ecn_threshold_ns(s.qos.ecn_ms, rate_Bps, burst),
            }
        )
    return out


def lower_tables(
    ir: RuleIR, version: str, capacity: dict[str, int], held: Mapping[Signature, list[int]] | None = None
) -> dict[str, list[NativeEntry]]:
    """The tables of ``ir``; raises ``CapacityError`` / ``NonPrefixMaskError`` first.
    ``held``: the positions the data plane holds (``positions.held``), kept where the
    rules' ranks allow; without it a fresh numbering with gaps."""
    n = len(ir.rules)
    if n > capacity["rules"]:
        raise CapacityError("rules", n, capacity["rules"])
    for s in ir.slices:
        if not 0 < s.slice_id < layout.MAX_SLICES:
            raise CapacityError("slices", s.slice_id + 1, layout.MAX_SLICES)
    for r in ir.rules:
        if not 0 <= r.action.slice_id < layout.MAX_SLICES:
            raise CapacityError("slices", r.action.slice_id + 1, layout.MAX_SLICES)
    if ir.paths * layout.MAX_LANES > layout.MAX_LANE_SLOTS:
        raise CapacityError("lanes", ir.paths * layout.MAX_LANES, layout.MAX_LANE_SLOTS)
    if len(version.encode()) > 32:
        raise ValueError(f"version {version!r} longer than 32 bytes")

    tables: dict[str, list[NativeEntry]] = {}
    special: dict[str, int] = {}
    for f in ("src_ip", "dst_ip"):
        tables[f], special[f"{f}_any"] = _ip_table(ir, f)
        if len(tables[f]) > capacity[f]:
            raise CapacityError(f, len(tables[f]), capacity[f])
    for f, size in (("dst_port", layout.PORTS), ("dscp", layout.DSCPS)):
        values, special[f"{f}_any"] = _array_bits(ir, f, size)
        tables[f] = rle(values)
    for f in TUNNEL_FIELDS:
        entries, special[f"{f}_present"], special[f"{f}_absent"] = _tunnel_table(ir, f)
        if len(entries) > capacity[f]:
            raise CapacityError(f, len(entries), capacity[f])
        tables[f] = entries
    tables["special"] = [{"slot": slot, "rules": rules_list(special[slot])} for slot in layout.SPECIAL_SLOTS]
    tables["actions"] = [
        {"rule": i, "slice_id": r.action.slice_id, "lane": r.action.lane, "rr_path": r.action.rr_path}
        for i, r in enumerate(ir.rules)
    ]
    tables["qos"] = qos_entries(ir)
    tables["meta"] = [
        {
            "version": version,
            "rules": n,
            "lanes": ir.lanes,
            "paths": ir.paths,
            "miss_mode": ir.miss.mode.value,
            "miss_lane": ir.miss.lane if ir.miss.mode is MissMode.FIXED else 0,
            "miss_path": ir.miss.rr_path if ir.miss.mode is MissMode.FIXED else 0,
        }
    ]
    # lowered with rule i at bit i; then each rule moves to its stable position
    sigs = positions.signatures(tables) if held else [()] * n
    return positions.place(tables, positions.assign(sigs, held or {}, min(capacity["rules"], layout.MAX_RULES)))


def usage_counts(tables: dict[str, list[NativeEntry]]) -> dict[str, int]:
    return {
        "rules": len(tables["actions"]),
        "src_ip": len(tables["src_ip"]),
        "dst_ip": len(tables["dst_ip"]),
        "vni": len(tables["vni"]),
        "teid": len(tables["teid"]),
        "vlan": len(tables["vlan"]),
        "slices": len(tables["qos"]),
    }


def first_rule(tables: dict[str, list[NativeEntry]], key: FlowKey) -> int | None:
    """What the data plane computes from ``tables`` for ``key``: the lowest position in
    the AND of the per-field sets, as the IR index of its rule, or None on a miss. A
    model for previews and tests."""
    order = positions.rule_positions(tables)
    bits = rules_bits(order)
    special = {e["slot"]: rules_bits(e["rules"]) for e in tables["special"]}
    for f in ("src_ip", "dst_ip"):
        best: tuple[int, list[int]] = (-1, [])
        addr = getattr(key, f)
        for e in tables[f]:
            net = ipaddress.IPv4Network(e["prefix"])
            if net.prefixlen > best[0] and int(net.network_address) == addr & int(net.netmask):
                best = (net.prefixlen, e["rules"])
        bits &= rules_bits(best[1]) | special[f"{f}_any"]
    for f, value in (("dst_port", key.dst_port), ("dscp", key.dscp)):
        hit = next(rules_bits(e["rules"]) for e in tables[f] if e["first"] <= value <= e["last"])
        bits &= hit | special[f"{f}_any"]
    for f in TUNNEL_FIELDS:
        v = getattr(key, f)
        if v is None:
            bits &= special[f"{f}_absent"]
        else:
            hits = [e for e in tables[f] if e["value"] == v]
            bits &= (rules_bits(hits[0]["rules"]) if hits else 0) | special[f"{f}_present"]
    return order.index((bits & -bits).bit_length() - 1) if bits else None
