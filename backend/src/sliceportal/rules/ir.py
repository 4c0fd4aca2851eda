"""The backend-neutral rule IR: what the compiler produces and every driver lowers.

A ``RuleIR`` is compiled for one target geometry (lanes x RR paths), so lanes here are
already folded onto the backend (docs/architecture.md, "A deploy, end to end") and every ``rr_path`` is
below ``RuleIR.paths``. Rules are ordered: the first rule whose match holds wins, exactly
as the lowest-index TCAM entry wins in seed 000; a packet no rule matches follows the
``MissPolicy`` (seed 000 Algorithm 1).

``RuleIR.classify`` is the reference semantics. Every data plane is tested against it.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator, Mapping
from dataclasses import asdict, dataclass, field, fields
from enum import StrEnum
from functools import cache
from typing import Any

from pydantic import TypeAdapter

# Widths of the match fields in bits, as they appear on the wire.
FIELD_WIDTHS: dict[str, int] = {
    "vni": 24,
    "teid": 32,
    "src_ip": 32,
    "dst_ip": 32,
    "dst_port": 16,
    "dscp": 6,
    "vlan": 12,
}

# The priority-lane space slice types are defined in (seed 000 Table 1: lanes 0-7).
CATALOGUE_LANES = 8


@dataclass(frozen=True, slots=True)
class Ternary:
    """A value/mask pair: a key ``x`` matches when ``x & mask == value``.

    ``value`` never has bits outside ``mask`` (P4Runtime rejects such entries).
    """

    value: int
    mask: int

    def __post_init__(self) -> None:
        if self.value & ~self.mask:
            raise ValueError(f"ternary value {self.value:#x} has bits outside mask {self.mask:#x}")

    @classmethod
    def exact(cls, value: int, width: int) -> Ternary:
        return cls(value, (1 << width) - 1)

    @classmethod
    def prefix(cls, value: int, prefix_len: int, width: int) -> Ternary:
        mask = ((1 << prefix_len) - 1) << (width - prefix_len) if prefix_len else 0
        return cls(value & mask, mask)

    def matches(self, key: int) -> bool:
        return key & self.mask == self.value

    def prefix_len(self, width: int) -> int | None:
        """The prefix length when the mask is a contiguous prefix mask, else None."""
        inverted = ~self.mask & ((1 << width) - 1)
        if inverted & (inverted + 1):
            return None
        return width - inverted.bit_length()


@dataclass(frozen=True, slots=True)
class FlowKey:
    """The header fields one packet presents to the classifier (innermost where nested).

    ``None`` means the packet does not carry that header (no VXLAN, no GTP-U, no 802.1Q).
    """

    src_ip: int
    dst_ip: int
    dst_port: int
    dscp: int
    vni: int | None = None
    teid: int | None = None
    vlan: int | None = None


@dataclass(frozen=True, slots=True)
class Match:
    """A ternary match over the fields of ``FIELD_WIDTHS``; ``None`` is a wildcard.

    A field that is matched (not ``None``) never matches a packet lacking that header.
    """

    src_ip: Ternary | None = None
    dst_ip: Ternary | None = None
    dst_port: Ternary | None = None
    dscp: Ternary | None = None
    vni: Ternary | None = None
    teid: Ternary | None = None
    vlan: Ternary | None = None

    def items(self) -> Iterator[tuple[str, Ternary]]:
        """The matched (non-wildcard) fields, in declaration order."""
        for f in fields(self):
            t = getattr(self, f.name)
            if t is not None:
                yield f.name, t

    def matches(self, key: FlowKey) -> bool:
        for name, t in self.items():
            value = getattr(key, name)
            if value is None or not t.matches(value):
                return False
        return True


@dataclass(frozen=True, slots=True)
class Action:
    """Where a matched packet goes: its slice, its priority lane and its RR path."""

    slice_id: int  # dense data-plane slice id (DP_SID), 1..len(RuleIR.slices)
    lane: int  # priority lane on the target, 0 = lowest priority
    rr_path: int  # round-robin path (first-level queue), 0..paths-1


@dataclass(frozen=True, slots=True)
class Rule:
    match: Match
    action: Action
    note: str = ""  # why the rule exists, shown in the preview (slice / service / users)


@dataclass(frozen=True, slots=True)
class Qos:
    """Per-slice queueing parameters (seed 004 virtual queue / meters). ``None`` = unlimited.

    ``rate_bps == 0`` admits nothing: every packet of the slice is dropped by the plane's
    per-slice policer and counted there as that slice's drop. A ``drop`` intent's flows get a
    sub-slice of rate 0 (docs/rules.md, "Per-flow rate limit and drop").
    """

    rate_bps: int | None = None  # rate limit (virtual-queue drain rate / meter PIR); 0 = drop all
    guaranteed_bps: int | None = None  # committed rate (meter CIR)
    burst_ms: float | None = None  # drop when the virtual queue delay would exceed this (C_DELAY)
    ecn_ms: float | None = None  # ECN-mark above this virtual queue delay (M_DELAY)


@dataclass(frozen=True, slots=True)
class SliceEntry:
    """A slice as the data plane needs it, independent of the rules that select it."""

    slice_id: int  # dense data-plane id used in Action.slice_id
    ref: int  # the portal's slice id, to map counters back
    name: str
    tenant_vni: int
    tenant_vlan: int | None
    lanes: tuple[int, ...]  # folded lanes this slice uses on the target
    qos: Qos = field(default_factory=Qos)
    # A sub-slice: the flows of this intent of slice ``ref`` (rate_limit / drop), with a
    # policer of their own; its counters roll up into slice ``ref`` (same ref) and are the
    # intent's own. None for a slice of the portal.
    intent_ref: int | None = None

    @property
    def drops_all(self) -> bool:
        return self.qos.rate_bps == 0


@dataclass(frozen=True, slots=True)
class TenantEntry:
    ref: int  # the portal's tenant id
    name: str
    vni: int
    vlan: int | None


class MissMode(StrEnum):
    ALGORITHM1 = "algorithm1"  # seed 000: lane from DSCP, path from UE source address bits
    FIXED = "fixed"  # every miss to one lane / path (e.g. best effort)


@dataclass(frozen=True, slots=True)
class MissPolicy:
    """What a packet no rule matches gets.

    ALGORITHM1: lane = innermost DSCP bits 2:0 folded onto the target's lanes (on a
    4-lane target that is DSCP bits 2:1, exactly seed 000 Algorithm 1), rr_path = innermost
    source address modulo paths (bits 2:0 on an 8-path target). Misses carry slice_id 0.
    """

    mode: MissMode = MissMode.ALGORITHM1
    lane: int = 0  # FIXED only
    rr_path: int = 0  # FIXED only


@dataclass(frozen=True, slots=True)
class Decision:
    slice_id: int
    lane: int
    rr_path: int
    rule_index: int | None  # index of the matching rule; None on a miss


def fold_lane(lane: int, target_lanes: int, source_lanes: int = CATALOGUE_LANES) -> int:
    """Fold a lane of a ``source_lanes`` space onto ``target_lanes`` (seed 000 Table 2: p >> 1)."""
    if not 0 <= lane < source_lanes:
        raise ValueError(f"lane {lane} outside 0..{source_lanes - 1}")
    return lane * target_lanes // source_lanes


@dataclass(frozen=True, slots=True)
class RuleIR:
    lanes: int  # priority lanes on the target (1, 2, 4 or 8)
    paths: int  # round-robin paths on the target (power of two)
    rules: tuple[Rule, ...]
    slices: tuple[SliceEntry, ...] = ()
    tenants: tuple[TenantEntry, ...] = ()
    miss: MissPolicy = field(default_factory=MissPolicy)
    # the canonical JSON, made once: an IR shared by a fleet's backends (services/compile_inputs.py)
    # is lowered, checked and stored once per backend, and asdict over its rules was the largest
    # part of a deploy's Python time per backend (bench scale_backends)
    _canonical: str | None = field(default=None, init=False, repr=False, compare=False)
    _matched: frozenset[str] | None = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        for n, what in ((self.lanes, "lanes"), (self.paths, "paths")):
            if n < 1 or n & (n - 1):
                raise ValueError(f"{what} must be a power of two, got {n}")
        for i, r in enumerate(self.rules):
            a = r.action
            if not (0 <= a.lane < self.lanes and 0 <= a.rr_path < self.paths):
                raise ValueError(f"rule {i}: lane {a.lane} / path {a.rr_path} outside the target geometry")

    def classify(self, key: FlowKey) -> Decision:
        """The reference semantics: first matching rule, else the miss policy."""
        for i, rule in enumerate(self.rules):
            if rule.match.matches(key):
                a = rule.action
                return Decision(a.slice_id, a.lane, a.rr_path, i)
        return self.miss_decision(key)

    def miss_decision(self, key: FlowKey) -> Decision:
        if self.miss.mode is MissMode.FIXED:
            return Decision(0, self.miss.lane, self.miss.rr_path, None)
        return Decision(0, fold_lane(key.dscp & 0b111, self.lanes), key.src_ip % self.paths, None)

    def _canonical_json(self) -> str:
        if self._canonical is None:
            out = asdict(self)
            del out["_canonical"], out["_matched"]
            # intent_ref is written for sub-slices only: an IR without rate_limit / drop intents
            # keeps the JSON and digest it had before sub-slices existed (no plane looks stale)
            for s in out["slices"]:
                if s["intent_ref"] is None:
                    del s["intent_ref"]
            object.__setattr__(self, "_canonical", json.dumps(out, sort_keys=True, separators=(",", ":")))
        assert self._canonical is not None
        return self._canonical

    def matched_fields(self) -> frozenset[str]:
        """Every field some rule matches on, found once: each backend of a fleet checks an IR
        it shares against its capabilities (``drivers.contract.check_fits``)."""
        if self._matched is None:
            object.__setattr__(self, "_matched", frozenset(name for r in self.rules for name, _ in r.match.items()))
        assert self._matched is not None
        return self._matched

    def json_text(self) -> str:
        """``to_json`` as its canonical text, made once: what each backend's rule set stores of
        an IR a fleet shares (parsing it into a dict for every backend, to be encoded again,
        was a tenth of a fan-out's CPU a backend; bench scale_backends)."""
        return self._canonical_json()

    def to_json(self) -> dict[str, Any]:
        """A fresh dict each call (the caller may keep or change it)."""
        out: dict[str, Any] = json.loads(self._canonical_json())
        return out

    def digest(self) -> str:
        """A stable content hash: the version a data plane reports for what it holds."""
        return hashlib.sha256(self._canonical_json().encode()).hexdigest()[:16]

    @staticmethod
    def from_json(data: Mapping[str, Any]) -> RuleIR:
        """The IR a rule set stored (``to_json``), with the same digest: what a driver lowers again
        when its native layout changed since the plan was stored."""
        return _ir_adapter().validate_python(data)


@cache
def _ir_adapter() -> TypeAdapter[RuleIR]:
    return TypeAdapter(RuleIR)
