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
