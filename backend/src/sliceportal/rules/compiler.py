"""The rule compiler: tenants + slices (services, subscribers) + one target -> ``RuleIR``.

Pure and I/O-free (ARCHITECTURE.md §4 step 1). The pipeline, explained in docs/rules.md:

1. validate: service lanes belong to the slice type, services of one slice that could see
   the same packet agree on the lane, no two slices claim the same packet, the target can
   key on every field the configuration needs;
2. fold each catalogue lane onto the target (``ir.fold_lane``; 4 lanes: lane >> 1);
3. allocate RR paths (per slice, balanced by subscribers; or per user group from the UE
   address bits, as the Algorithm 1 miss does);
4. build, per action (slice, lane, path), the exact key set it owns and cover it with as
   few ternary rules as we find (``rules.minimise``) -- or, with ``minimise=False``, the
   one-rule-per-flow baseline the minimised list is tested against.

Because no two actions may claim the same packet, the rules of different actions are
disjoint and their order does not change ``RuleIR.classify``.
"""

from __future__ import annotations

import itertools
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass

from sliceportal.rules.errors import AmbiguousMatchError, CompileError, MissingMatchFieldError
from sliceportal.rules.ir import (
    FIELD_WIDTHS,
    Action,
    Match,
    Rule,
    RuleIR,
    SliceEntry,
    TenantEntry,
    Ternary,
    fold_lane,
)
from sliceportal.rules.minimise import (
    Interval,
    Rectangle,
    intersect_intervals,
    intervals_to_prefixes,
    merge_intervals,
    merge_rectangles,
    minimise_set,
    prune_contained,
    values_to_intervals,
)
from sliceportal.rules.spec import ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec

DSCP_VALUES = 64
ALL_PORTS: tuple[Interval, ...] = ((0, 0xFFFF),)


@dataclass(frozen=True, slots=True)
class SliceExplanation:
    """Why a slice's rules look the way they do (shown in the compile preview)."""

    slice_id: int
    ref: int
    name: str
    tenant_ref: int
    lane_map: tuple[tuple[int, int], ...]  # (catalogue lane, target lane) per slice-type lane
    lanes: tuple[int, ...]  # target lanes the slice uses
    path_mode: str
    rr_paths: tuple[int, ...]
    path_reason: str
    subscribers: int
    flows: int  # subscribers x services, the flows the rules stand for
    rules_before: int  # one rule per flow (and per port prefix / DSCP value)
    rules_after: int
    keyed_on: tuple[str, ...]
    warnings: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class CompileResult:
    ir: RuleIR
    slices: tuple[SliceExplanation, ...]
    flows: int
    rules_before: int
    rules_after: int
    max_rules: int | None
    minimised: bool

    @property
    def fits(self) -> bool:
        return self.max_rules is None or len(self.ir.rules) <= self.max_rules

    def explain(self) -> dict[str, object]:
        """The preview's explanation, JSON-ready (the IR itself is ``self.ir.to_json()``)."""
        return {
            "version": self.ir.digest(),
            "lanes": self.ir.lanes,
            "paths": self.ir.paths,
            "flows": self.flows,
            "rules_before": self.rules_before,
            "rules_after": self.rules_after,
            "max_rules": self.max_rules,
            "fits": self.fits,
            "minimised": self.minimised,
            "miss": asdict(self.ir.miss),
            "slices": [asdict(e) for e in self.slices],
        }


@dataclass(slots=True)
class _Prepared:
    """Per-slice intermediate state shared by validation and emission."""

    spec: SliceSpec
    tenant: TenantSpec
    slice_id: int
    services: tuple[ServiceSpec, ...]
    src: list[Interval]  # merged UE address intervals
    ports_by_dscp: list[list[Interval]]  # union over all services, for cross-slice checks
    lane_rects: dict[int, list[Rectangle]]  # target lane -> (dst_port, dscp) rectangles
    lane_services: dict[int, list[str]]
    tunnel: dict[str, int]  # field -> exact value keyed (vni / vlan)
    warnings: list[str]
    rr_paths: tuple[int, ...] = ()
    path_reason: str = ""


def _service_ports(s: ServiceSpec) -> list[Interval]:
    return merge_intervals(s.dst_ports) if s.dst_ports else list(ALL_PORTS)


def _service_dscp(s: ServiceSpec) -> frozenset[int]:
    return frozenset(s.dscp) if s.dscp else frozenset(range(DSCP_VALUES))


def _check_services(spec: SliceSpec) -> tuple[ServiceSpec, ...]:
    services = spec.services or (ServiceSpec(name="(all traffic)", lane=spec.type_lanes[0]),)
    for s in services:
        if s.lane not in spec.type_lanes:
            raise CompileError(
                f"slice {spec.name!r}: service {s.name!r} uses lane {s.lane}, but the slice type "
                f"has lanes {'/'.join(map(str, spec.type_lanes))}",
                slice_ref=spec.ref,
                service=s.name,
                field="lane",
            )
    for i, a in enumerate(services):
        for b in services[i + 1 :]:
            if a.lane == b.lane:
                continue  # overlapping services of one lane agree on the action
            if _service_dscp(a) & _service_dscp(b) and intersect_intervals(_service_ports(a), _service_ports(b)):
                raise AmbiguousMatchError(
                    f"slice {spec.name!r}: services {a.name!r} (lane {a.lane}) and {b.name!r} "
                    f"(lane {b.lane}) match the same ports and DSCP values",
                    slice_ref=spec.ref,
                    service=b.name,
                    field="dst_ports",
                )
    return services


def _ports_by_dscp(services: Iterable[ServiceSpec]) -> list[list[Interval]]:
    per: list[list[Interval]] = [[] for _ in range(DSCP_VALUES)]
    for s in services:
        ports = _service_ports(s)
        for d in _service_dscp(s):
            per[d].extend(ports)
    return [merge_intervals(p) for p in per]


def _rectangles(services: Sequence[ServiceSpec]) -> list[Rectangle]:
    """The (dst_port, dscp) key set of one lane's services as few ternary rectangles.

    Two exact covers are built and the smaller kept: (a) DSCP values grouped by their port
    set, which merges services that split one port range by DSCP; (b) each service's own
    minimised ports x DSCP, merged rule-level and pruned of rectangles another contains,
    which wins when an any-DSCP service sits next to a one-DSCP service.
    """
    widths = (FIELD_WIDTHS["dst_port"], FIELD_WIDTHS["dscp"])
    by_ports: dict[tuple[Interval, ...], list[int]] = defaultdict(list)
    for d, dscp_ports in enumerate(_ports_by_dscp(services)):
        if dscp_ports:
            by_ports[tuple(dscp_ports)].append(d)
    grouped: list[Rectangle] = []
    for ports, dscps in by_ports.items():
        grouped.extend((p, d) for p in _port_ternaries(list(ports)) for d in _dscp_ternaries(dscps))
    per_service: list[Rectangle] = [
        (p, d)
        for s in services
        for p in _port_ternaries(_service_ports(s))
        for d in _dscp_ternaries(sorted(_service_dscp(s)))
    ]
    candidates = [merge_rectangles(grouped, widths), prune_contained(merge_rectangles(per_service, widths))]
    return min(candidates, key=len)


def _port_ternaries(ports: list[Interval]) -> list[Ternary | None]:
    if ports == list(ALL_PORTS):
        return [None]
    return list(minimise_set(ports, FIELD_WIDTHS["dst_port"]))


def _dscp_ternaries(dscps: Sequence[int]) -> list[Ternary | None]:
    if len(dscps) == DSCP_VALUES:
        return [None]
    return list(minimise_set(values_to_intervals(dscps), FIELD_WIDTHS["dscp"]))


def _needed_fields(slices: Sequence[SliceSpec]) -> dict[str, str]:
    """Field -> the slice / service that needs it, for the missing-field error."""
    need: dict[str, str] = {}
    for sl in slices:
        if sl.subscribers:
            need.setdefault("src_ip", f"slice {sl.name!r} (subscribers)")
        for s in sl.services:
            if s.dst_ports:
                need.setdefault("dst_port", f"service {s.name!r} of slice {sl.name!r}")
            if s.dscp:
                need.setdefault("dscp", f"service {s.name!r} of slice {sl.name!r}")
    return need


def _tunnel_disjoint(a: _Prepared, b: _Prepared) -> bool:
    return any(f in a.tunnel and f in b.tunnel and a.tunnel[f] != b.tunnel[f] for f in ("vni", "vlan"))


def _check_cross_slice(prepared: Sequence[_Prepared]) -> None:
    """Refuse two slices that claim one packet (a UE in both, same ports/DSCP, same tunnel)."""
    events = sorted((lo, hi, i) for i, p in enumerate(prepared) for lo, hi in p.src)
    active: list[tuple[int, int]] = []  # (hi, slice index); at most one per slice
    checked: set[tuple[int, int]] = set()
    for lo, hi, i in events:
        active = [(h, j) for h, j in active if h >= lo]
        for _, j in active:
            pair = (min(i, j), max(i, j))
            if j == i or pair in checked:
                continue
            checked.add(pair)
            a, b = prepared[pair[0]], prepared[pair[1]]
            if _tunnel_disjoint(a, b):
                continue
            for d in range(DSCP_VALUES):
                if intersect_intervals(a.ports_by_dscp[d], b.ports_by_dscp[d]):
                    raise AmbiguousMatchError(
                        f"slices {a.spec.name!r} and {b.spec.name!r} both claim UE addresses from "
                        f"{_ip(lo)} with the same ports / DSCP {d}; give them disjoint subscribers or "
                        "services, or key them on distinct tenant VNIs (match_tunnel)",
                        slice_ref=b.spec.ref,
                        field="subscribers",
                    )
        active.append((hi, i))


def _ip(v: int) -> str:
    return ".".join(str(v >> s & 0xFF) for s in (24, 16, 8, 0))


def _allocate_paths(prepared: Sequence[_Prepared], paths: int) -> None:
    """Per-slice RR paths by longest-processing-time: biggest slice to the least-loaded path.

    With equal slices this is slice k -> path (k-1) mod paths, i.e. seed 000's "subnet bits"
    grouping; with unequal ones it keeps the subscriber count per path balanced, which is
    what the first-level round robin shares fairly.
    """
    load = [0] * paths
    members: list[list[str]] = [[] for _ in range(paths)]
    per_slice = [p for p in prepared if p.spec.path_mode == "per_slice"]
    for p in sorted(per_slice, key=lambda p: (-len(p.spec.subscribers), p.slice_id)):
        path = min(range(paths), key=lambda k: (load[k], k))
        load[path] += len(p.spec.subscribers)
        members[path].append(p.spec.name)
        p.rr_paths = (path,)
    for p in per_slice:
        (path,) = p.rr_paths
        shared = len(members[path]) - 1
        p.path_reason = (
            f"per slice: {len(per_slice)} slice(s) over {paths} path(s), biggest slice first onto the "
            f"least-loaded path; path {path} carries {load[path]} subscriber(s)"
            + (f", shared with {shared} other slice(s)" if shared else ", exclusively")
        )
    bits = paths.bit_length() - 1
    for p in prepared:
        if p.spec.path_mode == "per_user_group":
            p.rr_paths = tuple(sorted(_groups_present(p.src, paths)))
            p.path_reason = (
                f"per user group: path = UE address mod {paths} (bits {max(bits - 1, 0)}:0), the bits "
                "seed 000 Algorithm 1 uses for misses, so a UE's matched and unmatched traffic share a path"
                if paths > 1
                else "per user group: the target has a single path"
            )


def _groups_present(src: Sequence[Interval], paths: int) -> set[int]:
    out: set[int] = set()
    for lo, hi in src:
        if hi - lo + 1 >= paths:
            return set(range(paths))
        out.update(v % paths for v in range(lo, hi + 1))
    return out


def _group_src(src: Sequence[Interval], paths: int, g: int) -> list[Ternary]:
    """The UE addresses ``a`` of ``src`` with ``a mod paths == g``, as ternaries.

    Those addresses are ``upper * paths + g``; the uppers of one interval are contiguous, so
    the group is a prefix set over the upper bits with the low bits fixed to ``g``.
    """
    k = paths.bit_length() - 1
    uppers: list[Interval] = []
    for lo, hi in src:
        first = lo + ((g - lo) % paths)
        last = hi - ((hi - g) % paths)
        if first <= last:
            uppers.append((first >> k, last >> k))
    low = paths - 1
    return [Ternary((u.value << k) | g, (u.mask << k) | low) for u in minimise_set(uppers, 32 - k)]


def _src_groups(p: _Prepared, paths: int, minimise: bool) -> dict[int, list[Ternary]]:
    """RR path -> the source ternaries whose traffic takes it."""
    if p.spec.path_mode == "per_slice":
        (path,) = p.rr_paths
        if minimise:
            return {path: minimise_set(p.src, 32)}
        return {path: [Ternary.prefix(s.ue_ip, s.prefix_len, 32) for s in p.spec.subscribers]}
    if minimise:
        groups = {g: _group_src(p.src, paths, g) for g in range(paths)}
        return {g: ts for g, ts in groups.items() if ts}
    out: dict[int, list[Ternary]] = defaultdict(list)
    for s in p.spec.subscribers:
        for g, t in _subscriber_pieces(s, paths):
            out[g].append(t)
    return dict(out)


def _subscriber_pieces(s: SubscriberSpec, paths: int) -> list[tuple[int, Ternary]]:
    pref = Ternary.prefix(s.ue_ip, s.prefix_len, 32)
    low = paths - 1
    return [(g, Ternary(pref.value | g, pref.mask | low)) for g in range(paths) if not (g ^ s.ue_ip) & pref.mask & low]


def _service_rects_unminimised(s: ServiceSpec) -> list[Rectangle]:
    ports: list[Ternary | None] = (
        list(intervals_to_prefixes(s.dst_ports, FIELD_WIDTHS["dst_port"])) if s.dst_ports else [None]
    )
    dscps: list[Ternary | None] = (
        [Ternary.exact(d, FIELD_WIDTHS["dscp"]) for d in sorted(set(s.dscp))] if s.dscp else [None]
    )
    return [(pt, dt) for pt in ports for dt in dscps]


def _prepare(spec: SliceSpec, tenant: TenantSpec, slice_id: int, target: TargetSpec) -> _Prepared:
    services = _check_services(spec)
    lane_svcs: dict[int, list[ServiceSpec]] = defaultdict(list)
    for s in services:
        lane_svcs[fold_lane(s.lane, target.lanes)].append(s)
    tunnel: dict[str, int] = {}
    warnings: list[str] = []
    if spec.match_tunnel:
        # One tenant key: the VNI its packets carry on the wire (seed 001), else the VLAN a
        # trunk tags them with (seed 002). Keying both would miss a tenant's untagged
        # VXLAN traffic on a target that can parse 802.1Q.
        if "vni" in target.match_fields:
            tunnel["vni"] = tenant.vni
        elif tenant.vlan is not None and "vlan" in target.match_fields:
            tunnel["vlan"] = tenant.vlan
        else:
            warnings.append("the target cannot key on the tenant VNI or VLAN; the slice is selected by UE "
                            "address only")
    if any(s.protocol for s in services):
        warnings.append("the rule IR has no L4 protocol field: services match UDP and TCP alike")
    return _Prepared(
        spec=spec,
        tenant=tenant,
        slice_id=slice_id,
        services=services,
        src=merge_intervals((s.first, s.last) for s in spec.subscribers),
        ports_by_dscp=_ports_by_dscp(services),
        lane_rects={lane: _rectangles(svcs) for lane, svcs in lane_svcs.items()},
        lane_services={lane: [s.name for s in svcs] for lane, svcs in lane_svcs.items()},
        tunnel=tunnel,
        warnings=warnings,
    )


def _emit(p: _Prepared, target: TargetSpec, minimise: bool) -> tuple[list[Rule], int]:
    """The slice's rules, and the one-rule-per-flow count they replace."""
    src_groups = _src_groups(p, target.paths, minimise)
    tunnel = {name: Ternary.exact(v, FIELD_WIDTHS[name]) for name, v in p.tunnel.items()}
    rules: list[Rule] = []
    before = 0
    n_pieces = sum(len(_subscriber_pieces(s, target.paths)) for s in p.spec.subscribers)
    if p.spec.path_mode == "per_slice":
        n_pieces = len(p.spec.subscribers)
    for svc in p.services:
        before += n_pieces * len(_service_rects_unminimised(svc))
    for lane in sorted(p.lane_rects, reverse=True):
        if minimise:
            rects = p.lane_rects[lane]
        else:
            rects = [
                r
                for svc in p.services
                if fold_lane(svc.lane, target.lanes) == lane
                for r in _service_rects_unminimised(svc)
            ]
        note_svc = ", ".join(p.lane_services[lane])
        for path, srcs in sorted(src_groups.items()):
            action = Action(slice_id=p.slice_id, lane=lane, rr_path=path)
            note = f"slice {p.spec.name!r} lane {lane} path {path}: {note_svc}"
            for src in srcs:
                for port, dscp in rects:
                    match = Match(src_ip=src, dst_port=port, dscp=dscp, **tunnel)
                    rules.append(Rule(match=match, action=action, note=note))
    return rules, before


def compile_rules(
    tenants: Iterable[TenantSpec],
    slices: Iterable[SliceSpec],
    target: TargetSpec,
    *,
    minimise: bool = True,
) -> CompileResult:
    """Compile a configuration for one target; raises ``CompileError`` on impossible input."""
    tenant_by_ref: dict[int, TenantSpec] = {}
    for t in tenants:
        if t.ref in tenant_by_ref:
            raise CompileError(f"tenant ref {t.ref} appears twice", field="tenants")
        tenant_by_ref[t.ref] = t
    ordered = sorted(slices, key=lambda s: s.ref)
    for a, b in itertools.pairwise(ordered):
        if a.ref == b.ref:
            raise CompileError(f"slice ref {a.ref} appears twice", slice_ref=a.ref)
    for field_name, who in _needed_fields(ordered).items():
        if field_name not in target.match_fields:
            raise MissingMatchFieldError(
                f"the target cannot match on {field_name!r}, which {who} needs", field=field_name
            )

    prepared: list[_Prepared] = []
    for slice_id, spec in enumerate(ordered, start=1):
        tenant = tenant_by_ref.get(spec.tenant_ref)
        if tenant is None:
            raise CompileError(
                f"slice {spec.name!r}: tenant {spec.tenant_ref} does not exist",
                slice_ref=spec.ref,
                field="tenant_ref",
            )
        prepared.append(_prepare(spec, tenant, slice_id, target))
    _check_cross_slice(prepared)
    _allocate_paths(prepared, target.paths)

    rules: list[Rule] = []
    explanations: list[SliceExplanation] = []
    entries: list[SliceEntry] = []
    for p in prepared:
        slice_rules, before = _emit(p, target, minimise)
        rules.extend(slice_rules)
        lane_map = tuple((lane, fold_lane(lane, target.lanes)) for lane in p.spec.type_lanes)
        lanes = tuple(sorted({t for _, t in lane_map}))
        keyed = ["src_ip"] if p.spec.subscribers else []
        if any(r.match.dst_port is not None for r in slice_rules):
            keyed.append("dst_port")
        if any(r.match.dscp is not None for r in slice_rules):
            keyed.append("dscp")
        keyed.extend(p.tunnel)
        explanations.append(
            SliceExplanation(
                slice_id=p.slice_id,
                ref=p.spec.ref,
                name=p.spec.name,
                tenant_ref=p.spec.tenant_ref,
                lane_map=lane_map,
                lanes=lanes,
                path_mode=p.spec.path_mode,
                rr_paths=p.rr_paths,
                path_reason=p.path_reason,
                subscribers=len(p.spec.subscribers),
                flows=len(p.spec.subscribers) * len(p.services),
                rules_before=before,
                rules_after=len(slice_rules),
                keyed_on=tuple(keyed),
                warnings=tuple(p.warnings)
                + (() if p.spec.subscribers else ("no subscribers: the slice has no rules yet",)),
            )
        )
        entries.append(
            SliceEntry(
                slice_id=p.slice_id,
                ref=p.spec.ref,
                name=p.spec.name,
                tenant_vni=p.tenant.vni,
                tenant_vlan=p.tenant.vlan,
                lanes=lanes,
                qos=p.spec.qos,
            )
        )
    ir = RuleIR(
        lanes=target.lanes,
        paths=target.paths,
        rules=tuple(rules),
        slices=tuple(entries),
        tenants=tuple(
            TenantEntry(ref=t.ref, name=t.name, vni=t.vni, vlan=t.vlan)
            for t in sorted(tenant_by_ref.values(), key=lambda t: t.ref)
        ),
        miss=target.miss,
    )
    return CompileResult(
        ir=ir,
        slices=tuple(explanations),
        flows=sum(e.flows for e in explanations),
        rules_before=sum(e.rules_before for e in explanations),
        rules_after=len(rules),
        max_rules=target.max_rules,
        minimised=minimise,
    )
