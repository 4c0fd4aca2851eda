"""Rule-set equivalence (issue #20 item 4): does a lowered form classify the whole key
space exactly as the IR does?

Both sides are first-match lists of ternary cubes over one key (named fields, fixed
widths). ``compare`` walks the key space by cube splitting: on a cube, find each side's
first rule that intersects it; if that rule covers the whole cube, the side's decision is
constant on it; otherwise split the cube on one bit the rule fixes and the cube does not,
and recurse. Every key is covered exactly once, so a finished walk with no mismatch is a
proof over the full space (2^86 keys for the NetFPGA TCAM), not a sample; a mismatch comes
with a concrete key.

Forms compared here: the NetFPGA TCAM entries and the P4Runtime classifier entries
(ternary by nature). The XDP maps are not ternary (LPM tries, per-value arrays and hashes
of rule bitmaps); ``sample_xdp`` checks its lowering model on points of every region of
the IR's partition, which is evidence, not proof.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Hashable, Iterator, Sequence
from dataclasses import dataclass

from sliceportal.drivers.contract import NativePlan
from sliceportal.rules.ir import FIELD_WIDTHS, FlowKey, MissMode, RuleIR

MISS: Hashable = ("miss",)  # seed 000 Algorithm 1: a function of the key both sides share

Decision = Hashable


@dataclass(frozen=True, slots=True)
class Space:
    """Named fields packed into one integer key, the first field most significant."""

    fields: tuple[tuple[str, int], ...]

    @property
    def width(self) -> int:
        return sum(w for _, w in self.fields)

    def pack(self, values: dict[str, tuple[int, int]]) -> tuple[int, int]:
        """(value, mask) of a cube from per-field (value, mask); absent fields are wildcards."""
        v = m = 0
        for name, w in self.fields:
            fv, fm = values.get(name, (0, 0))
            fm &= (1 << w) - 1
            v, m = (v << w) | (fv & fm), (m << w) | fm
        return v, m

    def unpack(self, key: int) -> dict[str, int]:
        out = {}
        shift = self.width
        for name, w in self.fields:
            shift -= w
            out[name] = (key >> shift) & ((1 << w) - 1)
        return out


@dataclass(frozen=True, slots=True)
class Classifier:
    """First match wins; ``default`` when nothing matches."""

    rules: tuple[tuple[int, int, Decision], ...]  # (value, mask, decision)
    default: Decision


@dataclass(frozen=True, slots=True)
class Result:
    equivalent: bool
    cubes: int  # cubes the walk visited (sample_xdp: points tried)
    counterexample: dict[str, int] | None = None
    decisions: tuple[Decision, Decision] | None = None


def _first(c: Classifier, v: int, m: int, start: int) -> tuple[int, bool]:
    """(index of the first rule from ``start`` intersecting cube (v, m), covers it)."""
    for j in range(start, len(c.rules)):
        rv, rm, _ = c.rules[j]
        if (rv ^ v) & rm & m == 0:
            return j, rm & ~m == 0
    return len(c.rules), True


def _decision(c: Classifier, j: int) -> Decision:
    return c.rules[j][2] if j < len(c.rules) else c.default


def compare(space: Space, a: Classifier, b: Classifier, limit: int = 2_000_000) -> Result:
    full = (1 << space.width) - 1
    stack = [(0, 0, 0, 0)]  # cube value, cube mask, first candidate rule of a, of b
    cubes = 0
    while stack:
        v, m, ia, ib = stack.pop()
        cubes += 1
        if cubes > limit:
            raise RuntimeError(f"equivalence walk exceeded {limit} cubes")
        ja, ca = _first(a, v, m, ia)
        jb, cb = (ja, True) if not ca else _first(b, v, m, ib)
        if not ca or not cb:
            rm = (a.rules[ja] if not ca else b.rules[jb])[1]
            bit = (rm & ~m & full).bit_length() - 1  # the highest bit the rule fixes, the cube not
            for x in (0, 1 << bit):
                stack.append((v | x, m | 1 << bit, ja, ib if not ca else jb))
            continue
        da, db = _decision(a, ja), _decision(b, jb)
        if da != db:
            return Result(False, cubes, space.unpack(v), (da, db))
    return Result(True, cubes)


# ---- the forms, as classifiers ---------------------------------------------------------------

TUNNEL = ("vni", "teid", "vlan")


def ir_space(with_tunnels: bool) -> Space:
    f: list[tuple[str, int]] = [(n, FIELD_WIDTHS[n]) for n in ("src_ip", "dst_ip", "dscp", "dst_port")]
    if with_tunnels:
        for t in TUNNEL:
            f += [(f"has_{t}", 1), (t, FIELD_WIDTHS[t])]
    return Space(tuple(f))


def from_ir(ir: RuleIR, space: Space, decide: Callable[[int, int, int], Decision]) -> Classifier:
    rules = []
    for rule in ir.rules:
        vals: dict[str, tuple[int, int]] = {}
        for name, t in rule.match.items():
            vals[name] = (t.value, t.mask)
            if name in TUNNEL:
                vals[f"has_{name}"] = (1, 1)
        a = rule.action
        rules.append((*space.pack(vals), decide(a.slice_id, a.lane, a.rr_path)))
    miss = MISS if ir.miss.mode is MissMode.ALGORITHM1 else decide(0, ir.miss.lane, ir.miss.rr_path)
    return Classifier(tuple(rules), miss)


def from_tcam(plan: NativePlan, space: Space) -> Classifier:
    """The NetFPGA plan's entries (lowest index wins); a miss is Algorithm 1 in the RTL."""
    (entries,) = plan.tables.values()
    rules = []
    for e in entries:
        vals = {n: (e["key"][n], e["mask"][n]) for n in e["key"]}
        a = e["action"]
        rules.append((*space.pack(vals), (a["slice_id"], a["lane"], a["rr_path"])))
    return Classifier(tuple(rules), MISS)


def from_p4runtime(plan: NativePlan, space: Space, tenant_id: int, classifier: str) -> Classifier:
    """The P4 classifier entries a frame of tenant ``tenant_id`` can meet, highest
    priority first; lanes only (the program has no RR path: p4-no-paths)."""
    rules = []
    default: Decision = (0, 0)  # the program's own default: miss_fixed(0)
    names = {n for n, _ in space.fields}
    for e in plan.tables[classifier]:
        if e.get("default"):
            default = MISS if e["action"].endswith("miss_algorithm1") else (0, e["params"]["lane"])
            continue
        match = e["match"]
        tv, tm = match.get("tenant_id", [0, 0])
        if (tenant_id ^ tv) & tm & 0xFF:
            continue  # another tenant's entry
        vals = {}
        for n, (value, mask) in match.items():
            if n == "tenant_id":
                continue
            if n not in names:
                raise ValueError(f"P4 entry matches {n!r}, outside the compared key space")
            vals[n] = (value, mask if mask >= 0 else (1 << dict(space.fields)[n]) - 1)
        rules.append((e["priority"], *space.pack(vals), (e["params"]["slice_id"], e["params"]["lane"])))
    rules.sort(key=lambda r: -r[0])
    return Classifier(tuple((v, m, d) for _, v, m, d in rules), default)


# ---- XDP: sampled ------------------------------------------------------------------------------


def regions(space: Space, c: Classifier) -> Iterator[tuple[int, int, Decision]]:
    """The disjoint cubes on which ``c`` is constant (its partition of the key space)."""
    stack = [(0, 0, 0)]
    full = (1 << space.width) - 1
    while stack:
        v, m, i = stack.pop()
        j, covers = _first(c, v, m, i)
        if not covers:
            bit = (c.rules[j][1] & ~m & full).bit_length() - 1
            stack += [(v, m | 1 << bit, j), (v | 1 << bit, m | 1 << bit, j)]
            continue
        yield v, m, _decision(c, j)


def sample_xdp(ir: RuleIR, first_rule: Callable[[FlowKey], int | None], per_region: int = 4, seed: int = 20) -> Result:
    """Points of every region of the IR's partition (a corner, the opposite corner, random
    fillings of the free bits) through the XDP lowering's model."""
    space = ir_space(with_tunnels=False)
    c = from_ir(ir, space, lambda s, lane, p: (s, lane, p))
    rng = random.Random(seed)
    full = (1 << space.width) - 1
    n = 0
    for v, m, _ in regions(space, c):
        free = full & ~m
        for fill in [0, free] + [rng.getrandbits(space.width) & free for _ in range(per_region - 2)]:
            k = space.unpack(v | fill)
            key = FlowKey(src_ip=k["src_ip"], dst_ip=k["dst_ip"], dst_port=k["dst_port"], dscp=k["dscp"])
            n += 1
            want, got = ir.classify(key).rule_index, first_rule(key)
            if want != got:
                return Result(False, n, k, (want, got))
    return Result(True, n)


def describe(r: Result, what: str) -> str:
    if r.equivalent:
        return f"{what}: equivalent to the IR (walk of {r.cubes} cubes / sample points)"
    return f"{what}: differs at {r.counterexample}: {r.decisions}"


__all__: Sequence[str] = ("Classifier", "Result", "Space", "compare", "from_ir", "from_p4runtime", "from_tcam")
