"""The rule compiler: tenants + slices (services, subscribers) + one target -> ``RuleIR``.

Pure and I/O-free (docs/architecture.md, "A deploy, end to end"). The pipeline, explained in docs/rules.md:

1. validate: service lanes belong to the slice type, services of one slice that could see
   the same packet agree on the lane, no two slices claim the same packet, the target can
   key on every field the configuration needs;
2. fold each catalogue lane onto the target (``ir.fold_lane``; 4 lanes: lane >> 1);
3. allocate RR paths (per slice, balanced by subscribers; or per user group from the UE
   address bits, as the Algorithm 1 miss does);
4. build, per action (slice, lane, path), the exact key set it owns and cover it with as
   few ternary rules as we find (``rules.minimise``) -- or, with ``minimise=False``, the
   one-rule-per-flow baseline the minimised list is tested against;
5. per-flow intents (seed 001 §5) first: each intent's flows -- its UEs clipped to the
   slice's, its ports / DSCP, its TEIDs where the target keys on them -- get entries of
   their own, placed above every slice rule, so they win over the slice's services.

Because no two slices may claim the same packet, and no two intents of different actions
the same flow, the rules of different actions are disjoint except an intent's over its
own slice's; intent rules come first, so ``RuleIR.classify`` gives the intent's action.
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
    Qos,
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
from sliceportal.rules.spec import IntentSpec, ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec

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
    intents: int = 0  # per-flow intents of the slice
    intent_rules: int = 0  # of rules_after, those the intents produced (listed first in the IR)


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


# ---- per-flow intents ------------------------------------------------------------------

INTENT_NOTE = "intent #"  # a rule's note starts with this and the intent's ref


def intent_note(ref: int) -> str:
    return f"{INTENT_NOTE}{ref}:"


def intent_ref_of(note: str) -> int | None:
    """The intent a rule was compiled from (None for a slice's own rule)."""
    if not note.startswith(INTENT_NOTE):
        return None
    head = note[len(INTENT_NOTE) :].split(":", 1)[0]
    return int(head) if head.isdigit() else None


def clip_intervals(a: Sequence[Interval], b: Sequence[Interval]) -> list[Interval]:
    """The intersection of two sorted disjoint interval lists."""
    out: list[Interval] = []
    i = j = 0
    while i < len(a) and j < len(b):
        lo, hi = max(a[i][0], b[j][0]), min(a[i][1], b[j][1])
        if lo <= hi:
            out.append((lo, hi))
        if a[i][1] < b[j][1]:
            i += 1
        else:
            j += 1
    return out


def _intent_ports(i: IntentSpec) -> list[Interval]:
    return merge_intervals(i.dst_ports) if i.dst_ports else list(ALL_PORTS)


def _intent_dscp(i: IntentSpec) -> frozenset[int]:
    return frozenset(i.dscp) if i.dscp else frozenset(range(DSCP_VALUES))


def intent_action(i: IntentSpec) -> tuple[str, int | None, int | None, int | None]:
    """What the intent does to its flows; two intents of overlapping flows must agree on it.

    A rate limit is the intent's own policer (its sub-slice), so two rate_limit intents never
    agree: the flows both select would be limited by whichever comes first.
    """
    if i.action == "rate_limit":
        return (i.action, None, None, i.ref)
    return (i.action, i.lane, i.rr_path, None)


def intents_overlap(a: IntentSpec, b: IntentSpec) -> bool:
    """Whether some flow is selected by both intents.

    TEIDs are deliberately not compared: the NetFPGA classifier cannot key on them, so two
    intents of one UE that differ only by TEID would select the same packets there.
    """
    return (
        intersect_intervals(merge_intervals(a.ue_intervals), merge_intervals(b.ue_intervals))
        and intersect_intervals(_intent_ports(a), _intent_ports(b))
        and bool(_intent_dscp(a) & _intent_dscp(b))
    )


def intent_conflicts(existing: Iterable[IntentSpec], new: IntentSpec) -> list[IntentSpec]:
    """The intents of ``existing`` that ask another action of a flow ``new`` also selects."""
    return [
        e for e in existing if e.ref != new.ref and intent_action(e) != intent_action(new) and intents_overlap(e, new)
    ]


def check_intent(spec: SliceSpec, i: IntentSpec) -> None:
    """Refuse an intent no data plane could enforce as asked (nothing is silently widened)."""
    who = f"slice {spec.name!r}: intent {i.ref}"
    if i.action == "rate_limit":
        # The intent's flows leave the slice's own policer for one of their own (a sub-slice):
        # a rate above the slice's limit would let them exceed what the slice may send.
        limit = spec.qos.rate_bps
        if i.rate_bps is None or i.rate_bps <= 0:
            raise CompileError(f"{who}: rate_limit needs a rate above 0", slice_ref=spec.ref, field="rate_mbps")
        if limit is not None and i.rate_bps > limit:
            raise CompileError(
                f"{who}: rate {i.rate_bps / 1e6:g} Mbit/s is above the slice's own rate limit "
                f"{limit / 1e6:g} Mbit/s; the intent can only narrow it",
                slice_ref=spec.ref,
                field="rate_mbps",
            )
    if i.protocol is not None:
        raise CompileError(
            f"{who}: the data planes cannot key on the L4 protocol; an intent for {i.protocol} only would "
            "also take the UE's other protocol -- leave protocol out",
            slice_ref=spec.ref,
            field="protocol",
        )
    if i.lane is not None and i.lane not in spec.type_lanes:
        raise CompileError(
            f"{who}: lane {i.lane} is not one of the slice type's lanes {'/'.join(map(str, spec.type_lanes))}",
            slice_ref=spec.ref,
            field="lane",
        )


def _check_intents(spec: SliceSpec) -> None:
    for n, i in enumerate(spec.intents):
        check_intent(spec, i)
        for other in intent_conflicts(spec.intents[:n], i):
            raise AmbiguousMatchError(
                f"slice {spec.name!r}: intents {other.ref} ({other.action}) and {i.ref} ({i.action}) ask different "
                "actions of overlapping flows",
                slice_ref=spec.ref,
                field="intents",
            )


def _intent_as_service(i: IntentSpec, lane: int) -> ServiceSpec:
    return ServiceSpec(name=f"intent {i.ref}", lane=lane, dst_ports=i.dst_ports, dscp=i.dscp)


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
        for i in sl.intents:
            need.setdefault("src_ip", f"intent {i.ref} of slice {sl.name!r}")
            if i.dst_ports:
                need.setdefault("dst_port", f"intent {i.ref} of slice {sl.name!r}")
            if i.dscp:
                need.setdefault("dscp", f"intent {i.ref} of slice {sl.name!r}")
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
    _check_intents(spec)
    for i in spec.intents:
        if i.rr_path is not None and i.rr_path >= target.paths:
            raise CompileError(
                f"slice {spec.name!r}: intent {i.ref} steers to RR path {i.rr_path}, but the target has "
                f"paths 0..{target.paths - 1}",
                slice_ref=spec.ref,
                field="rr_path",
            )
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
            warnings.append("the target cannot key on the tenant VNI or VLAN; the slice is selected by UE address only")
    if any(s.protocol for s in services):
        warnings.append("the rule IR has no L4 protocol field: services match UDP and TCP alike")
    return _Prepared(
        spec=spec,
        tenant=tenant,
        slice_id=slice_id,
        services=services,
        src=merge_intervals((s.first, s.last) for s in spec.subscribers),
        # an intent claims its ports / DSCP for the slice's UEs: another slice sharing those
        # UEs on those ports would otherwise lose packets to it
        ports_by_dscp=_ports_by_dscp([*services, *(_intent_as_service(i, spec.type_lanes[0]) for i in spec.intents)]),
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


def _prefix_pieces(t: Ternary, paths: int) -> list[tuple[int, Ternary]]:
    low = paths - 1
    return [(g, Ternary(t.value | g, t.mask | low)) for g in range(paths) if not (g ^ t.value) & t.mask & low]


def _intent_src_groups(
    p: _Prepared, i: IntentSpec, src: list[Interval], paths: int, minimise: bool
) -> dict[int, list[Ternary]]:
    """RR path -> the intent's UE ternaries: steer names the path; otherwise the slice's own."""
    if i.action == "steer" or p.spec.path_mode == "per_slice":
        path = i.rr_path if i.action == "steer" and i.rr_path is not None else p.rr_paths[0]
        return {path: minimise_set(src, 32) if minimise else list(intervals_to_prefixes(src, 32))}
    if minimise:
        groups = {g: _group_src(src, paths, g) for g in range(paths)}
        return {g: ts for g, ts in groups.items() if ts}
    out: dict[int, list[Ternary]] = defaultdict(list)
    for t in intervals_to_prefixes(src, 32):
        for g, piece in _prefix_pieces(t, paths):
            out[g].append(piece)
    return dict(out)


def _intent_lane_services(p: _Prepared, i: IntentSpec, target: TargetSpec) -> dict[int, list[ServiceSpec]]:
    """Target lane -> the (port, DSCP) sets the intent's flows take in that lane.

    With a lane, all of the intent's flows; a steer without a lane keeps each service's
    lane and moves only the path, so it covers the intent's flows the services select.
    """
    if i.lane is not None:
        return {fold_lane(i.lane, target.lanes): [_intent_as_service(i, i.lane)]}
    out: dict[int, list[ServiceSpec]] = defaultdict(list)
    for s in p.services:
        ports = clip_intervals(_service_ports(s), _intent_ports(i))
        dscp = _service_dscp(s) & _intent_dscp(i)
        if ports and dscp:
            out[fold_lane(s.lane, target.lanes)].append(
                ServiceSpec(
                    name=s.name,
                    lane=s.lane,
                    dst_ports=() if ports == list(ALL_PORTS) else tuple(ports),
                    dscp=() if len(dscp) == DSCP_VALUES else tuple(sorted(dscp)),
                )
            )
    return dict(out)


POLICED_ACTIONS = ("rate_limit", "drop")  # actions enforced by a policer of the intent's own (a sub-slice)


def _sub_slice_ids(prepared: Sequence[_Prepared]) -> dict[tuple[int, int], int]:
    """(slice ref, intent ref) -> the dense id of the intent's sub-slice, after every slice's.

    Numbered after the portal's slices so that adding or removing an intent never renumbers
    a slice (its rules and policer stay as the data plane holds them).
    """
    out: dict[tuple[int, int], int] = {}
    next_id = len(prepared) + 1
    for p in prepared:
        for i in sorted(p.spec.intents, key=lambda i: i.ref):
            if i.action in POLICED_ACTIONS and clip_intervals(merge_intervals(i.ue_intervals), p.src):
                out[p.spec.ref, i.ref] = next_id
                next_id += 1
    return out


INTENT_BURST_MS = 10.0  # a rate_limit intent's bucket depth when its slice sets no burst limit


def _sub_slice_qos(i: IntentSpec, parent: Qos) -> Qos:
    """rate_limit: the intent's rate, with the slice's burst limit (sla.max_delay_ms) or
    10 ms of the rate -- explicit, so every plane sizes the bucket alike (the P4 vQueue
    would otherwise never drop); drop: rate 0."""
    if i.action == "drop":
        return Qos(rate_bps=0)
    return Qos(rate_bps=i.rate_bps, burst_ms=parent.burst_ms if parent.burst_ms is not None else INTENT_BURST_MS)


def _emit_intents(
    p: _Prepared, target: TargetSpec, minimise: bool, sub_ids: dict[tuple[int, int], int]
) -> tuple[list[Rule], int]:
    """The rules of the slice's intents (placed before every slice rule), and their flow count.

    prioritise / steer keep the slice's id (its policer); rate_limit / drop give the flows
    the intent's sub-slice id, whose policer enforces the intent."""
    tunnel = {name: Ternary.exact(v, FIELD_WIDTHS[name]) for name, v in p.tunnel.items()}
    rules: list[Rule] = []
    before = 0
    for i in sorted(p.spec.intents, key=lambda i: i.ref):
        src = clip_intervals(merge_intervals(i.ue_intervals), p.src)
        if not src:
            p.warnings.append(f"intent {i.ref} names no UE of this slice: it has no entries")
            continue
        teids: list[Ternary | None] = [None]
        if i.teids:
            if "teid" in target.match_fields:
                teids = [Ternary.exact(t, FIELD_WIDTHS["teid"]) for t in sorted(set(i.teids))]
            else:
                p.warnings.append(
                    f"intent {i.ref}: the target cannot key on the TEID; its UEs' flows are selected by UE address"
                )
        groups = _intent_src_groups(p, i, src, target.paths, minimise)
        n_src = sum(len(v) for v in _intent_src_groups(p, i, src, target.paths, False).values())
        for lane, svcs in sorted(_intent_lane_services(p, i, target).items(), reverse=True):
            rects = _rectangles(svcs) if minimise else [r for s in svcs for r in _service_rects_unminimised(s)]
            before += n_src * len(teids) * sum(len(_service_rects_unminimised(s)) for s in svcs)
            for path, srcs in sorted(groups.items()):
                action = Action(slice_id=sub_ids.get((p.spec.ref, i.ref), p.slice_id), lane=lane, rr_path=path)
                note = f"{intent_note(i.ref)} slice {p.spec.name!r} {i.action} lane {lane} path {path}"
                for src_t in srcs:
                    for teid in teids:
                        for port, dscp in rects:
                            match = Match(src_ip=src_t, dst_port=port, dscp=dscp, teid=teid, **tunnel)
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

    # Intents first: an intent's entries overlap its own slice's, and the first match wins.
    sub_ids = _sub_slice_ids(prepared)
    intent_rules = {p.slice_id: _emit_intents(p, target, minimise, sub_ids) for p in prepared}
    rules: list[Rule] = [r for p in prepared for r in intent_rules[p.slice_id][0]]
    explanations: list[SliceExplanation] = []
    entries: list[SliceEntry] = []
    for p in prepared:
        own_rules, before = _emit(p, target, minimise)
        rules.extend(own_rules)
        i_rules, i_before = intent_rules[p.slice_id]
        slice_rules = [*i_rules, *own_rules]
        before += i_before
        lane_map = tuple((lane, fold_lane(lane, target.lanes)) for lane in p.spec.type_lanes)
        lanes = tuple(sorted({t for _, t in lane_map}))
        keyed = ["src_ip"] if p.spec.subscribers else []
        if any(r.match.dst_port is not None for r in slice_rules):
            keyed.append("dst_port")
        if any(r.match.dscp is not None for r in slice_rules):
            keyed.append("dscp")
        if any(r.match.teid is not None for r in slice_rules):
            keyed.append("teid")
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
                intents=len(p.spec.intents),
                intent_rules=len(i_rules),
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
    entries.extend(_sub_slice_entries(prepared, sub_ids, rules))
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


def _sub_slice_entries(
    prepared: Sequence[_Prepared], sub_ids: dict[tuple[int, int], int], rules: Sequence[Rule]
) -> list[SliceEntry]:
    """The sub-slices of rate_limit / drop intents: the parent's ref and tenant, the lanes
    the intent's rules use, and the intent's policer."""
    lanes_of: dict[int, set[int]] = defaultdict(set)
    for r in rules:
        lanes_of[r.action.slice_id].add(r.action.lane)
    out = []
    for p in prepared:
        for i in sorted(p.spec.intents, key=lambda i: i.ref):
            sid = sub_ids.get((p.spec.ref, i.ref))
            if sid is None:
                continue
            out.append(
                SliceEntry(
                    slice_id=sid,
                    ref=p.spec.ref,
                    name=f"{p.spec.name} intent #{i.ref} ({i.action})",
                    tenant_vni=p.tenant.vni,
                    tenant_vlan=p.tenant.vlan,
                    lanes=tuple(sorted(lanes_of[sid])),
                    qos=_sub_slice_qos(i, p.spec.qos),
                    intent_ref=i.ref,
                )
            )
    return out
