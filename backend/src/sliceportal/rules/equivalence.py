"""Rule-set equivalence (issue #20 item 4): does a lowered plan classify the whole key
space exactly as the IR does?

Both sides become first-match lists of ternary cubes over one packed key (named fields of
fixed widths, the first field most significant): the IR directly, a data plane through
the *ternary view* its driver derives from the entries it would write (``TernaryView``).
``check`` walks the key space by cube splitting: on a cube, find each side's first entry
that intersects it; if that entry covers the whole cube, the side's verdict is constant on
it; otherwise split the cube on one bit the entry fixes and the cube does not, and
recurse. Every key is covered exactly once, so a finished walk with no mismatch is a proof
over the full space (2^86 keys for the NetFPGA TCAM, 2^165 for the P4 classifier), not a
sample; a mismatch comes with one concrete key and both verdicts.

The walk is bounded (cubes and wall time): past the budget the answer is ``unchecked``
with the reason, never a long wait. Pure: no driver, database or I/O here.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

from sliceportal.rules.ir import FIELD_WIDTHS, MissMode, RuleIR

# The verdict components a view may decide, in this order.
VERDICT_PARTS: tuple[str, ...] = ("slice_id", "lane", "rr_path")
TUNNELS: tuple[str, ...] = ("vni", "teid", "vlan")
METHOD = "exact cube-splitting walk over the whole key space"

MAX_CUBES = 400_000
MAX_SECONDS = 2.0


@dataclass(frozen=True, slots=True)
class Algorithm1:
    """The miss of seed 000 Algorithm 1, a function of the key both sides share: lane from
    the innermost DSCP folded onto ``lanes``, RR path from the UE address modulo ``paths``
    (``None`` where the plane has no RR paths)."""

    lanes: int
    paths: int | None


Outcome = tuple[int, ...] | Algorithm1  # a verdict over the view's ``decides``, or the miss


@dataclass(frozen=True, slots=True)
class Space:
    """Named fields packed into one integer key, the first field most significant."""

    fields: tuple[tuple[str, int], ...]

    @property
    def width(self) -> int:
        return sum(w for _, w in self.fields)

    def offsets(self) -> dict[str, tuple[int, int]]:
        """field -> (shift of its least significant bit, width)."""
        out = {}
        shift = self.width
        for name, w in self.fields:
            shift -= w
            out[name] = (shift, w)
        return out

    def pack(self, values: Mapping[str, tuple[int, int]]) -> tuple[int, int]:
        """(value, mask) of a cube from per-field (value, mask); absent fields are wildcards."""
        v = m = 0
        for name, w in self.fields:
            fv, fm = values.get(name, (0, 0))
            fm &= (1 << w) - 1
            v, m = (v << w) | (fv & fm), (m << w) | fm
        return v, m

    def unpack(self, key: int) -> dict[str, int]:
        return {name: (key >> shift) & ((1 << w) - 1) for name, (shift, w) in self.offsets().items()}


Block = tuple[int, int]  # (value, mask) over the packed key


@dataclass(frozen=True, slots=True)
class TernaryEntry:
    """One entry of a view: keys with ``key & mask == value`` get ``verdict``.

    ``any_of`` extends the ternary to a product of unions (what a per-field table lookup
    realises, e.g. a port array run that is no single value/mask): the key must also fall
    in some block of every group. Empty for a plain TCAM / P4 ternary entry.
    """

    value: int
    mask: int
    priority: int  # higher wins; entries of equal priority must not overlap unless their order is meant
    verdict: tuple[int, ...]
    any_of: tuple[tuple[Block, ...], ...] = ()


@dataclass(frozen=True, slots=True)
class TernaryView:
    """A lowered plan as the data plane would classify with it: ordered ternary entries over
    a packed key, a default for keys no entry matches, and what the plane decides.

    ``tenant_field`` / ``tenant_by_vlan``: a plane that slices its tables per tenant (the
    P4 program, seed 002) keys every entry on a tenant id it assigns from the VLAN; the IR
    side then scopes each rule to the tenant id of its slice's VLAN (a tenant without a
    mapped VLAN has no traffic on this plane).
    """

    space: Space
    entries: tuple[TernaryEntry, ...]
    default: Outcome
    decides: tuple[str, ...] = VERDICT_PARTS
    tenant_field: str | None = None
    tenant_by_vlan: Mapping[int, int] = field(default_factory=dict)
    source: str = ""  # which native tables the view was derived from, for the detail line


class ViewError(Exception):
    """A plan cannot be shown as one ternary view; ``str()`` says why (reported as unchecked)."""


class ViewTooLargeError(ViewError):
    """Expanding a plan into ternary entries would exceed the budget."""


class EquivalenceVerdict(StrEnum):
    PROVEN = "proven"
    DIFFERS = "differs"
    UNCHECKED = "unchecked"


@dataclass(frozen=True, slots=True)
class Counterexample:
    key: dict[str, int]  # the full packed key, field by field (has_* = 1: header present)
    ir: str  # what the IR decides for it
    plane: str  # what the lowered plan decides for it


@dataclass(frozen=True, slots=True)
class EquivalenceResult:
    verdict: EquivalenceVerdict
    method: str
    checked_entries: int  # entries of the view the walk compared with the IR's rules
    cubes: int  # cubes the walk visited
    elapsed_ms: float
    detail: str
    counterexample: Counterexample | None = None


def unchecked(reason: str, elapsed_ms: float = 0.0) -> EquivalenceResult:
    return EquivalenceResult(EquivalenceVerdict.UNCHECKED, "none", 0, 0, round(elapsed_ms, 1), reason)


# ---- helpers views use ----------------------------------------------------------------------


def interval_cubes(lo: int, hi: int, width: int) -> list[tuple[int, int]]:
    """The fewest aligned blocks (value, mask) covering exactly ``lo..hi`` of a ``width``-bit field."""
    full = (1 << width) - 1
    out = []
    while lo <= hi:
        size = lo & -lo if lo else 1 << width
        while size > hi - lo + 1:
            size >>= 1
        out.append((lo, full & ~(size - 1)))
        lo += size
    return out


def merged(intervals: Iterable[tuple[int, int]]) -> list[tuple[int, int]]:
    """Sorted inclusive intervals with touching ones joined."""
    out: list[tuple[int, int]] = []
    for lo, hi in sorted(intervals):
        if out and lo <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(hi, out[-1][1]))
        else:
            out.append((lo, hi))
    return out


def ir_space(fields: Iterable[str]) -> Space:
    """The IR's key over ``fields``: a tunnel field is preceded by its 1-bit "present" flag."""
    out: list[tuple[str, int]] = []
    for name in fields:
        if name in TUNNELS:
            out.append((f"has_{name}", 1))
        out.append((name, FIELD_WIDTHS[name]))
    return Space(tuple(out))


# ---- the IR as a classifier -----------------------------------------------------------------

# value, mask, groups of blocks (see TernaryEntry.any_of), outcome; first match wins
_Rule = tuple[int, int, tuple[tuple[Block, ...], ...], Outcome]


def _ir_miss(ir: RuleIR, decides: tuple[str, ...]) -> Outcome:
    if ir.miss.mode is MissMode.ALGORITHM1:
        return Algorithm1(ir.lanes, ir.paths if "rr_path" in decides else None)
    parts = {"slice_id": 0, "lane": ir.miss.lane, "rr_path": ir.miss.rr_path}
    return tuple(parts[p] for p in decides)


def _ir_rules(ir: RuleIR, view: TernaryView, space: Space) -> tuple[list[_Rule], Outcome]:
    vlan_of = {s.slice_id: s.tenant_vlan for s in ir.slices}
    rules: list[_Rule] = []
    for rule in ir.rules:
        vals: dict[str, tuple[int, int]] = {}
        for name, t in rule.match.items():
            vals[name] = (t.value, t.mask)
            if name in TUNNELS:
                vals[f"has_{name}"] = (1, 1)
        if view.tenant_field is not None:
            vlan = vlan_of.get(rule.action.slice_id)
            tid = view.tenant_by_vlan.get(vlan) if vlan is not None else None
            if tid is None:
                continue  # this tenant's traffic never reaches the plane with a tenant id
            vals[view.tenant_field] = (tid, (1 << dict(space.fields)[view.tenant_field]) - 1)
        a = {"slice_id": rule.action.slice_id, "lane": rule.action.lane, "rr_path": rule.action.rr_path}
        rules.append((*space.pack(vals), (), tuple(a[p] for p in view.decides)))
    return rules, _ir_miss(ir, view.decides)


def _view_rules(view: TernaryView, space: Space) -> list[_Rule]:
    """The view's entries in match order, re-packed into the compared space."""
    extra = space.width - view.space.width  # IR-only fields are appended, least significant
    ordered = sorted(view.entries, key=lambda e: -e.priority)  # stable: equal priorities keep their order
    return [
        (
            e.value << extra,
            e.mask << extra,
            tuple(tuple((v << extra, m << extra) for v, m in g) for g in e.any_of),
            e.verdict,
        )
        for e in ordered
    ]


# ---- the walk -------------------------------------------------------------------------------


class _Budget(Exception):
    pass


def _first(rules: Sequence[_Rule], v: int, m: int, start: int) -> tuple[int, int]:
    """(index of the first rule from ``start`` intersecting cube (v, m), bits to split on).

    No bits: the rule covers the whole cube. Otherwise the bits some part of the rule
    fixes and the cube does not; splitting on one of them makes progress."""
    for j in range(start, len(rules)):
        rv, rm, groups, _ = rules[j]
        if (rv ^ v) & rm & m:
            continue
        split = rm & ~m
        for blocks in groups:
            partial = 0
            for bv, bm in blocks:
                if (bv ^ v) & bm & m == 0:
                    if bm & ~m == 0:
                        break  # one block holds the whole cube: this group covers it
                    partial = partial or bm & ~m
            else:
                if not partial:
                    break  # no block of this group meets the cube: the rule does not
                split = split or partial
                continue
        else:
            return j, split
    return len(rules), 0


def walk(
    width: int,
    a: Sequence[_Rule],
    a_default: Outcome,
    b: Sequence[_Rule],
    b_default: Outcome,
    *,
    max_cubes: int = MAX_CUBES,
    deadline: float | None = None,
) -> tuple[int, tuple[int, Outcome, Outcome] | None]:
    """(cubes visited, None if ``a`` and ``b`` agree on every key else (key, a's, b's outcome)).

    Raises ``_Budget`` past ``max_cubes`` or ``deadline`` (``time.monotonic()``)."""
    full = (1 << width) - 1
    stack = [(0, 0, 0, 0)]  # cube value, cube mask, first candidate rule of a, of b
    cubes = 0
    while stack:
        v, m, ia, ib = stack.pop()
        cubes += 1
        if cubes > max_cubes or (deadline is not None and cubes & 0x3F == 0 and time.monotonic() > deadline):
            raise _Budget(cubes)
        ja, sa = _first(a, v, m, ia)
        jb, sb = (ja, 0) if sa else _first(b, v, m, ib)
        if sa or sb:
            bit = ((sa or sb) & full).bit_length() - 1  # the highest bit the entry fixes, the cube not
            for x in (0, 1 << bit):
                stack.append((v | x, m | 1 << bit, ja, jb if not sa else ib))
            continue
        da = a[ja][3] if ja < len(a) else a_default
        db = b[jb][3] if jb < len(b) else b_default
        if da != db:
            return cubes, (v, da, db)
    return cubes, None


def describe(outcome: Outcome, decides: Sequence[str]) -> str:
    if isinstance(outcome, Algorithm1):
        path = f", RR path = UE address mod {outcome.paths}" if outcome.paths is not None else ""
        return f"miss: Algorithm 1 (lane = DSCP bits 2:0 folded onto {outcome.lanes} lanes{path})"
    parts = dict(zip(decides, outcome, strict=True))
    if parts.get("slice_id") == 0:
        return "miss: " + ", ".join(f"{k.replace('_', ' ')} {v}" for k, v in parts.items() if k != "slice_id")
    return ", ".join(f"{k.replace('_id', '').replace('_', ' ')} {v}" for k, v in parts.items())


def check(
    ir: RuleIR,
    view: TernaryView | None,
    *,
    max_cubes: int = MAX_CUBES,
    max_seconds: float = MAX_SECONDS,
    reason: str = "the driver gives no ternary view of its plan",
) -> EquivalenceResult:
    """Compare the IR with a driver's view of its lowered plan over the whole key space."""
    started = time.monotonic()
    if view is None:
        return unchecked(reason)
    if bad := set(view.decides) - set(VERDICT_PARTS):
        raise ValueError(f"a view decides {sorted(bad)}, not among {VERDICT_PARTS}")
    # The IR may key on a field the view lacks (the plane cannot see it): append it, so
    # the walk finds the keys on which that matters instead of ignoring the field.
    have = {n for n, _ in view.space.fields}
    needed = [n for r in ir.rules for n, _ in r.match.items()]
    missing = [n for n in dict.fromkeys(needed) if n not in have]
    space = Space(view.space.fields + ir_space(missing).fields) if missing else view.space
    ir_rules, ir_miss = _ir_rules(ir, view, space)
    plane = _view_rules(view, space)
    try:
        cubes, diff = walk(
            space.width, ir_rules, ir_miss, plane, view.default, max_cubes=max_cubes, deadline=started + max_seconds
        )
    except _Budget as b:
        ms = (time.monotonic() - started) * 1000
        return unchecked(
            f"the walk stopped at its budget ({b.args[0]} cubes, {ms:.0f} ms; at most "
            f"{max_cubes} cubes / {max_seconds:g} s) before covering the key space",
            ms,
        )
    ms = round((time.monotonic() - started) * 1000, 1)
    scope = " per tenant (each rule on its tenant's VLAN)" if view.tenant_field else ""
    if diff is None:
        return EquivalenceResult(
            EquivalenceVerdict.PROVEN,
            METHOD,
            len(plane),
            cubes,
            ms,
            f"{len(plane)} {view.source or 'plan'} entries classify all 2^{space.width} keys{scope} exactly as "
            f"the {len(ir.rules)} IR rules ({cubes} cubes)",
        )
    key, d_ir, d_plane = diff
    return EquivalenceResult(
        EquivalenceVerdict.DIFFERS,
        METHOD,
        len(plane),
        cubes,
        ms,
        f"the {view.source or 'plan'} entries classify a key differently from the IR{scope}",
        Counterexample(space.unpack(key), describe(d_ir, view.decides), describe(d_plane, view.decides)),
    )
