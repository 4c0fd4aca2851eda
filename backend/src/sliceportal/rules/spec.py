"""The rule compiler's input: what an operator configured, independent of the ORM.

The lead's service layer builds these frozen dataclasses from the database rows; the
compiler (``rules.compiler``) never sees a session. Every constructor validates its own
fields and raises ``SpecError`` (a ``CompileError``) naming the offending object, so bad
input is refused before anything is compiled.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

from sliceportal.rules.errors import SpecError
from sliceportal.rules.ir import CATALOGUE_LANES, FIELD_WIDTHS, MissMode, MissPolicy, Qos

PathMode = Literal["per_slice", "per_user_group"]
PATH_MODES: tuple[str, ...] = ("per_slice", "per_user_group")


def _is_pow2(n: int) -> bool:
    return n >= 1 and not n & (n - 1)


@dataclass(frozen=True, slots=True)
class TenantSpec:
    ref: int
    name: str
    vni: int  # VXLAN VNI that isolates the tenant on the wire (seed 001 §4.1)
    vlan: int | None = None  # 802.1Q VID for P4 table slicing (seed 002)

    def __post_init__(self) -> None:
        if not 0 <= self.vni < 1 << FIELD_WIDTHS["vni"]:
            raise SpecError(f"tenant {self.name!r}: VNI {self.vni} outside 0..2^24-1", field="vni")
        if self.vlan is not None and not 1 <= self.vlan <= 4094:
            raise SpecError(f"tenant {self.name!r}: VLAN {self.vlan} outside 1..4094", field="vlan")


@dataclass(frozen=True, slots=True)
class ServiceSpec:
    """Which of a slice's traffic goes to which of its slice type's lanes (seed 000 Table 2).

    ``dst_ports`` are inclusive (lo, hi) ranges of the innermost L4 destination port and
    ``dscp`` the innermost DSCP values; an empty tuple means "any".
    """

    name: str
    lane: int  # catalogue lane 0-7 (seed 000 Table 1), one of the slice type's lanes
    dst_ports: tuple[tuple[int, int], ...] = ()
    dscp: tuple[int, ...] = ()
    # The IR has no L4 protocol field: a protocol is recorded and reported, not matched.
    protocol: Literal["udp", "tcp"] | None = None

    def __post_init__(self) -> None:
        if not 0 <= self.lane < CATALOGUE_LANES:
            raise SpecError(
                f"service {self.name!r}: lane {self.lane} outside 0..{CATALOGUE_LANES - 1}",
                service=self.name,
                field="lane",
            )
        for lo, hi in self.dst_ports:
            if not 0 <= lo <= hi <= 0xFFFF:
                raise SpecError(
                    f"service {self.name!r}: port range {lo}-{hi} is not within 0..65535 with lo <= hi",
                    service=self.name,
                    field="dst_ports",
                )
        for d in self.dscp:
            if not 0 <= d < 64:
                raise SpecError(f"service {self.name!r}: DSCP {d} outside 0..63", service=self.name, field="dscp")


@dataclass(frozen=True, slots=True)
class SubscriberSpec:
    """A UE (``prefix_len`` 32) or a block of UEs imported as one prefix."""

    ref: int
    imsi: str
    ue_ip: int  # innermost source IPv4 as an integer
    prefix_len: int = 32
    teids: tuple[int, ...] = ()

    def __post_init__(self) -> None:
        if not 0 <= self.prefix_len <= 32:
            raise SpecError(f"subscriber {self.imsi}: prefix length {self.prefix_len}", field="prefix_len")
        if not 0 <= self.ue_ip < 1 << 32:
            raise SpecError(f"subscriber {self.imsi}: UE address {self.ue_ip} is not IPv4", field="ue_ip")
        host_bits = (1 << (32 - self.prefix_len)) - 1
        if self.ue_ip & host_bits:
            raise SpecError(
                f"subscriber {self.imsi}: UE address has host bits set below /{self.prefix_len}",
                field="ue_ip",
            )
        for t in self.teids:
            if not 0 <= t < 1 << 32:
                raise SpecError(f"subscriber {self.imsi}: TEID {t} is not 32-bit", field="teids")

    @property
    def first(self) -> int:
        return self.ue_ip

    @property
    def last(self) -> int:
        return self.ue_ip | ((1 << (32 - self.prefix_len)) - 1)


IntentAction = Literal["prioritise", "steer", "rate_limit", "drop"]
INTENT_ACTIONS: tuple[str, ...] = ("prioritise", "steer", "rate_limit", "drop")


@dataclass(frozen=True, slots=True)
class IntentSpec:
    """A per-flow intent of one slice (seed 001 §5): these UEs' flows get this action.

    ``ue`` holds (address, prefix length) pairs -- the UEs the intent names, already resolved
    from IMSI / TEID by the service layer; the compiler clips them to the slice's own UEs, so
    an intent never reaches beyond its slice. ``teids`` narrows to those GTP-U tunnels where
    the target can key on the TEID. Empty ``dst_ports`` / ``dscp`` mean "any".
    """

    ref: int
    ue: tuple[tuple[int, int], ...]
    action: IntentAction = "prioritise"
    lane: int | None = None  # catalogue lane 0-7 (prioritise; steer keeps the services' lanes when None)
    rr_path: int | None = None  # steer: the RR path (first-level queue) the flows take
    teids: tuple[int, ...] = ()
    dst_ports: tuple[tuple[int, int], ...] = ()
    dscp: tuple[int, ...] = ()
    # Recorded as asked; the rule IR has no L4 protocol field, so the compiler refuses it
    # rather than widen the intent to UDP and TCP alike.
    protocol: Literal["udp", "tcp"] | None = None
    rate_bps: int | None = None  # rate_limit: the intent's flows together get at most this rate

    def __post_init__(self) -> None:
        who = f"intent {self.ref}"
        if self.action not in INTENT_ACTIONS:
            raise SpecError(f"{who}: action {self.action!r} is not one of {INTENT_ACTIONS}", field="action")
        if not self.ue:
            raise SpecError(f"{who}: names no UE (IMSI, UE address or TEID)", field="ue")
        for addr, plen in self.ue:
            if not 0 <= plen <= 32 or not 0 <= addr < 1 << 32 or addr & ((1 << (32 - plen)) - 1):
                raise SpecError(f"{who}: UE prefix {addr:#x}/{plen} is not an IPv4 prefix", field="ue")
        if self.lane is not None and not 0 <= self.lane < CATALOGUE_LANES:
            raise SpecError(f"{who}: lane {self.lane} outside 0..{CATALOGUE_LANES - 1}", field="lane")
        if self.action == "prioritise" and self.lane is None:
            raise SpecError(f"{who}: prioritise needs a lane", field="lane")
        if self.action == "steer" and self.rr_path is None:
            raise SpecError(f"{who}: steer needs an rr_path", field="rr_path")
        if self.action == "rate_limit" and (self.rate_bps is None or self.rate_bps <= 0):
            raise SpecError(f"{who}: rate_limit needs a rate above 0 bit/s, got {self.rate_bps}", field="rate_mbps")
        if self.action != "rate_limit" and self.rate_bps is not None:
            raise SpecError(f"{who}: a rate is only for rate_limit, not {self.action}", field="rate_mbps")
        if self.rr_path is not None and self.rr_path < 0:
            raise SpecError(f"{who}: rr_path {self.rr_path} is negative", field="rr_path")
        for lo, hi in self.dst_ports:
            if not 0 <= lo <= hi <= 0xFFFF:
                raise SpecError(f"{who}: port range {lo}-{hi} is not within 0..65535 with lo <= hi", field="dst_ports")
        for d in self.dscp:
            if not 0 <= d < 64:
                raise SpecError(f"{who}: DSCP {d} outside 0..63", field="dscp")
        for t in self.teids:
            if not 0 <= t < 1 << 32:
                raise SpecError(f"{who}: TEID {t} is not 32-bit", field="teids")

    @property
    def ue_intervals(self) -> list[tuple[int, int]]:
        return sorted((a, a | ((1 << (32 - p)) - 1)) for a, p in self.ue)


@dataclass(frozen=True, slots=True)
class SliceSpec:
    ref: int
    name: str
    tenant_ref: int
    type_lanes: tuple[int, ...]  # the slice type's catalogue lanes (seed 000 Table 1)
    qos: Qos = field(default_factory=Qos)
    services: tuple[ServiceSpec, ...] = ()
    subscribers: tuple[SubscriberSpec, ...] = ()
    path_mode: PathMode = "per_slice"
    match_tunnel: bool = False  # also key on the tenant's VNI / VLAN where the target can
    intents: tuple[IntentSpec, ...] = ()  # per-flow intents, above the slice's own rules

    def __post_init__(self) -> None:
        if not self.type_lanes:
            raise SpecError(f"slice {self.name!r}: slice type has no lanes", slice_ref=self.ref)
        for lane in self.type_lanes:
            if not 0 <= lane < CATALOGUE_LANES:
                raise SpecError(
                    f"slice {self.name!r}: slice-type lane {lane} outside 0..7",
                    slice_ref=self.ref,
                    field="type_lanes",
                )
        if self.path_mode not in PATH_MODES:
            raise SpecError(
                f"slice {self.name!r}: path mode {self.path_mode!r} is not one of {PATH_MODES}",
                slice_ref=self.ref,
                field="path_mode",
            )
        refs = [i.ref for i in self.intents]
        if len(set(refs)) != len(refs):
            raise SpecError(f"slice {self.name!r}: duplicate intent refs", slice_ref=self.ref)
        names = [s.name for s in self.services]
        if len(set(names)) != len(names):
            raise SpecError(f"slice {self.name!r}: duplicate service names", slice_ref=self.ref)


@dataclass(frozen=True, slots=True)
class TargetSpec:
    """What the compiler needs of one backend (built from a driver's ``Capabilities``)."""

    lanes: int
    paths: int
    match_fields: frozenset[str]
    max_rules: int | None = None  # classifier capacity; None = unknown / unbounded
    miss: MissPolicy = field(default_factory=MissPolicy)

    def __post_init__(self) -> None:
        for n, what in ((self.lanes, "lanes"), (self.paths, "paths")):
            if not _is_pow2(n):
                raise SpecError(f"target {what} must be a power of two, got {n}", field=what)
        if self.lanes > CATALOGUE_LANES:
            raise SpecError(f"target has {self.lanes} lanes, more than the catalogue's 8", field="lanes")
        unknown = self.match_fields - FIELD_WIDTHS.keys()
        if unknown:
            raise SpecError(f"target match fields {sorted(unknown)} are not IR fields", field="match_fields")
        if self.miss.mode is MissMode.FIXED and not (
            0 <= self.miss.lane < self.lanes and 0 <= self.miss.rr_path < self.paths
        ):
            raise SpecError("fixed miss lane / path outside the target geometry", field="miss")
