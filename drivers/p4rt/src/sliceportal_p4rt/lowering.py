"""IR -> P4Runtime entries of slicing.p4, in the driver's normal form (pure, no I/O).

Normal form of one entry (JSON-serialisable, as ``read_state`` reproduces it):
``{"match": {field: [value, mask]}, "priority": p, "action": name, "params": {name: v}}``
with exact fields as ``[value, full_mask]`` and wildcards omitted; a table's default
entry as ``{"default": true, "action": ..., "params": ...}``; a meter cell as
``{"index": i, "cir": .., "cburst": .., "pir": .., "pburst": ..}``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from sliceportal.core.jsontext import canonical
from sliceportal.drivers.contract import CapacityError, DriverError, NativeEntry
from sliceportal.drivers.stable import longest_rising
from sliceportal.rules.ir import FIELD_WIDTHS, MissMode, Qos, RuleIR, TenantEntry

from .p4info import (
    CLASSIFIER,
    EGRESS_VLAN,
    ING,
    PORT_TENANT,
    SLICE_METER,
    SLICE_QOS,
    TENANT_FORWARD,
    VLAN_TENANT,
)

# Classifier priorities (higher wins in P4Runtime, the first rule wins in the IR) fall along the
# IR's order with gaps, and an entry the switch already holds keeps its priority (see
# ``assign_priorities``): one rule added or removed writes one entry, not every entry below it.
MAX_PRIORITY = (1 << 31) - 1  # P4Runtime priorities are int32 > 0 (PI / BMv2)
FIRST_PRIORITY = 1 << 30  # a fresh table starts mid-range: room to insert above and below
PRIORITY_GAP = 1 << 12  # between neighbours of a fresh table: 12 halvings before a renumber
MatchKey = tuple[tuple[str, int, int], ...]
UNLIMITED_NS = (1 << 32) - 1
MAX_TENANTS = 255  # tenant_id_t is 8 bits; 0 = no tenant


@dataclass(frozen=True)
class PortPlan:
    """Seed 002 port roles: exclusive (access) ports bound to a tenant VID, shared trunks."""

    access: dict[int, int] = field(default_factory=dict)  # port -> tenant VLAN ID
    trunks: tuple[int, ...] = ()
    uplink: int | None = None  # where traffic from access ports goes (a trunk)


def byte_time(rate_bps: int) -> int:
    """Transmission time of one byte at ``rate_bps`` in ns * 2^-10 (slicing.p4 vqueue)."""
    return max(1, round(8e9 * 1024 / rate_bps))


def qos_entry(slice_id: int, qos: Qos, mode: str) -> NativeEntry | None:
    if qos.rate_bps is None:
        return None
    match = {"slice_id": [slice_id, 0xFF]}
    if mode == "meter":
        return {"match": match, "priority": 0, "action": f"{ING}.vqueue.meter_police", "params": {}}
    if qos.rate_bps == 0:
        # rate 0 (a drop intent's sub-slice): the slowest drain and no room -- every packet
        # would exceed a burst limit of 0 ns, so VirtualQueue drops it and counts it (slice_drops)
        params = {"byte_time": UNLIMITED_NS, "c_delay": 0, "m_delay": UNLIMITED_NS}
        return {"match": match, "priority": 0, "action": f"{ING}.vqueue.queue_manage", "params": params}
    c_delay = UNLIMITED_NS if qos.burst_ms is None else round(qos.burst_ms * 1e6)
    m_delay = UNLIMITED_NS if qos.ecn_ms is None else round(qos.ecn_ms * 1e6)
    return {
        "match": match,
        "priority": 0,
        "action": f"{ING}.vqueue.queue_manage",
        "params": {
            "byte_time": byte_time(qos.rate_bps),
            "c_delay": min(c_delay, UNLIMITED_NS),
            "m_delay": min(m_delay, UNLIMITED_NS),
        },
    }


def meter_entry(slice_id: int, qos: Qos) -> NativeEntry | None:
    """trTCM in bytes: PIR = rate limit, CIR = guaranteed rate, bursts = burst_ms of each."""
    if qos.rate_bps is None:
        return None
    if qos.rate_bps == 0:
        # rate 0: 1 byte/s into 1-byte buckets -- every packet is red, dropped and counted
        return {"index": slice_id, "cir": 1, "cburst": 1, "pir": 1, "pburst": 1}
    pir = qos.rate_bps // 8
    cir = min(pir, (qos.guaranteed_bps or qos.rate_bps) // 8)
    burst_s = (qos.burst_ms or 10.0) / 1000
    return {
        "index": slice_id,
        "cir": cir,
        "cburst": max(1, round(cir * burst_s)),
        "pir": pir,
        "pburst": max(1, round(pir * burst_s)),
    }


def match_key(e: NativeEntry) -> MatchKey:
    """What identifies a classifier entry apart from its priority: its (field, value, mask)s."""
    return tuple(sorted((k, int(v[0]), int(v[1])) for k, v in e["match"].items()))


def _spread(n: int, lo: int, hi: int) -> list[int] | None:
    """``n`` falling priorities strictly inside (lo, hi), or None if they do not fit. Bounded
    on both sides: spread evenly (the gap halves on each insertion at one spot). Open at the
    bottom (lo = 0) or top (hi > MAX_PRIORITY): PRIORITY_GAP apart from the bound that is set."""
    if hi - lo - 1 < n:
        return None
    top_open, bottom_open = hi > MAX_PRIORITY, lo == 0
    if top_open and bottom_open and FIRST_PRIORITY - PRIORITY_GAP * (n - 1) > 0:
        return [FIRST_PRIORITY - PRIORITY_GAP * t for t in range(n)]
    if bottom_open and not top_open and hi - PRIORITY_GAP * n > 0:
        return [hi - PRIORITY_GAP * (t + 1) for t in range(n)]
    if top_open and not bottom_open and lo + PRIORITY_GAP * n <= MAX_PRIORITY:
        return [lo + PRIORITY_GAP * (n - t) for t in range(n)]
    step = (min(hi, MAX_PRIORITY + 1) - lo) // (n + 1)
    return [min(hi, MAX_PRIORITY + 1) - step * (t + 1) for t in range(n)]


def _longest_falling(held: Sequence[tuple[int, int]]) -> set[int]:
    """Positions of a longest subsequence of ``held`` (position, priority) whose priorities
    strictly fall: the entries that keep their priority."""
    return {held[i][0] for i in longest_rising([-prio for _, prio in held])}


def assign_priorities(keys: Sequence[MatchKey], held: Mapping[MatchKey, int]) -> list[int]:
    """Priorities for classifier entries given in IR order (first match wins), strictly
    falling along that order, keeping ``held`` (what the switch holds: match -> priority)
    for as many entries as keep their rank: a longest run of held priorities that still
    falls in the new order stays; new and re-ranked entries take priorities inside the gap
    between their kept neighbours; when a gap is too small, only its neighbourhood (kept
    entries on either side, one at a time) is renumbered."""
    n = len(keys)
    prio: list[int | None] = [None] * n
    for i in _longest_falling([(i, held[k]) for i, k in enumerate(keys) if k in held]):
        prio[i] = held[keys[i]]
    i = 0
    while i < n:
        if prio[i] is not None:
            i += 1
            continue
        start, end = i, i
        while end < n and prio[end] is None:
            end += 1
        while True:  # the run [start, end) between kept neighbours, widened until it fits
            hi = prio[start - 1] if start > 0 else MAX_PRIORITY + 1
            lo = prio[end] if end < n else 0
            assert hi is not None and lo is not None
            got = _spread(end - start, lo, hi)
            if got is not None:
                break
            if start == 0 and end == n:
                raise DriverError(f"{n} classifier entries do not fit the priority range 1..{MAX_PRIORITY}")
            if start > 0:
                start -= 1
            if end < n:
                end += 1
        prio[start:end] = got
        i = end
    return [p for p in prio if p is not None]


def assign_tenant_ids(tenants: Sequence[TenantEntry], held: Mapping[int, int]) -> dict[int, int]:
    """VNI -> the tenant id the tables key on (1..MAX_TENANTS). Stable, as classifier
    priorities are (issue #14 item 4): a tenant whose VLAN ID the switch binds keeps its id,
    so a tenant coming or going rewrites that tenant's entries only, never renumbers the
    others'. A new tenant takes an id the switch holds for no one: an id freed by this very
    push still keys the leaving tenant's entries until the push deletes them, and reusing it
    would classify the newcomer's packets by those."""
    ids: dict[int, int] = {}
    taken: set[int] = set()
    for t in tenants:
        tid = held.get(t.vlan) if t.vlan is not None else None
        if tid is not None and tid not in taken and 1 <= tid <= MAX_TENANTS:
            ids[t.vni] = tid
            taken.add(tid)
    bound = set(held.values())
    for t in tenants:
        if t.vni not in ids:
            free = [i for i in range(1, MAX_TENANTS + 1) if i not in taken]
            # every free id still bound to a leaving tenant: reuse one (fits, not hitless)
            tid = next((i for i in free if i not in bound), free[0])
            ids[t.vni] = tid
            taken.add(tid)
    return ids


def lower_ir(
    ir: RuleIR,
    ports: PortPlan,
    mode: str,
    lanes: int,
    sizes: dict[str, int],
    held: Mapping[MatchKey, int] | None = None,
    rule_of: dict[tuple[MatchKey, int], int] | None = None,
    held_tenants: Mapping[int, int] | None = None,
) -> dict[str, list[NativeEntry]]:
    """``held``: the classifier priorities the switch holds (match -> priority), kept where
    the rank allows. ``rule_of`` (filled when given): (match, priority) -> IR rule index.
    ``held_tenants``: the tenant ids the switch binds (VLAN ID -> tenant id), kept."""
    if len(ir.tenants) > MAX_TENANTS:
        raise CapacityError("tenants", len(ir.tenants), MAX_TENANTS)
    tenants = assign_tenant_ids(ir.tenants, held_tenants or {})
    vlan_of = {t.vni: t.vlan for t in ir.tenants}
    tenant_by_vlan = {t.vlan: tenants[t.vni] for t in ir.tenants if t.vlan is not None}
    slice_tenant = {}
    for s in ir.slices:
        if s.tenant_vni not in tenants:
            raise DriverError(f"slice {s.name!r} belongs to tenant VNI {s.tenant_vni}, which the IR lacks")
        if not 1 <= s.slice_id < sizes.get("slices", 256):
            raise CapacityError("slices", s.slice_id, sizes.get("slices", 256) - 1)
        slice_tenant[s.slice_id] = tenants[s.tenant_vni]
    for port, vid in ports.access.items():
        if vid not in tenant_by_vlan:
            raise DriverError(f"access port {port} is bound to VLAN {vid}, which no tenant has")

    out: dict[str, list[NativeEntry]] = {
        name: []
        for name in (
            PORT_TENANT,
            VLAN_TENANT,
            CLASSIFIER,
            SLICE_QOS,
            TENANT_FORWARD,
            EGRESS_VLAN,
            SLICE_METER,
        )
    }
    for port, vid in sorted(ports.access.items()):
        out[PORT_TENANT].append(
            _exact(
                {"ingress_port": port},
                f"{ING}.tenant.set_access_tenant",
                {"tenant_id": tenant_by_vlan[vid], "vid": vid},
            )
        )
        out[EGRESS_VLAN].append(_exact({"egress_port": port}, "SlicingEgress.vlan_tag.pop_vlan", {}))
    for port in ports.trunks:
        out[PORT_TENANT].append(_exact({"ingress_port": port}, f"{ING}.tenant.set_trunk", {}))
        out[EGRESS_VLAN].append(_exact({"egress_port": port}, "SlicingEgress.vlan_tag.push_tenant_vlan", {}))
        for vid, tid in sorted(tenant_by_vlan.items()):
            out[VLAN_TENANT].append(
                _exact(
                    {"ingress_port": port, "vlan_valid": 1, "vid": vid},
                    f"{ING}.tenant.set_vlan_tenant",
                    {"tenant_id": tid},
                )
            )
    for vid, tid in sorted(tenant_by_vlan.items()):
        own = sorted(p for p, v in ports.access.items() if v == vid)
        for port in own:
            if ports.uplink is not None:
                out[TENANT_FORWARD].append(_fwd(tid, port, ports.uplink))
        for port in ports.trunks:
            dest: int | None
            if own:
                dest = own[0]
            elif ports.uplink is not None and port != ports.uplink:
                dest = ports.uplink
            else:
                dest = next((t for t in ports.trunks if t != port), None)
            if dest is not None:
                out[TENANT_FORWARD].append(_fwd(tid, port, dest))

    classified: list[tuple[int, NativeEntry]] = []  # (IR rule index, entry) in IR order
    seen: set[MatchKey] = set()
    for i, rule in enumerate(ir.rules):
        rule_tenant = slice_tenant.get(rule.action.slice_id)
        if rule_tenant is None:
            raise DriverError(f"rule {i} selects slice {rule.action.slice_id}, which the IR lacks")
        if vlan_of.get(next(s.tenant_vni for s in ir.slices if s.slice_id == rule.action.slice_id)) is None:
            continue  # a tenant without a VLAN has no traffic on this data plane
        match: dict[str, list[int]] = {"tenant_id": [rule_tenant, 0xFF]}
        for name, t in rule.match.items():
            if name in ("vni", "teid", "vlan"):
                match[f"has_{name}"] = [1, 1]
            if t.mask:
                match[name] = [t.value, t.mask]
        entry: NativeEntry = {
            "match": match,
            "action": f"{ING}.classifier.set_slice",
            "params": {"slice_id": rule.action.slice_id, "lane": rule.action.lane},
        }
        key = match_key(entry)
        if key in seen:
            continue  # the same match as an earlier rule: never hit (first match wins)
        seen.add(key)
        classified.append((i, entry))
    keys = [match_key(e) for _, e in classified]
    for (i, e), key, p in zip(classified, keys, assign_priorities(keys, held or {}), strict=True):
        e["priority"] = p
        out[CLASSIFIER].append(e)
        if rule_of is not None:
            rule_of[key, p] = i
    if ir.miss.mode is MissMode.ALGORITHM1:
        shift = (8 // lanes).bit_length() - 1
        out[CLASSIFIER].append(
            {"default": True, "action": f"{ING}.classifier.miss_algorithm1", "params": {"lane_shift": shift}}
        )
    elif ir.miss.lane != 0:  # miss_fixed(0) is the program's own default: nothing to write
        out[CLASSIFIER].append(
            {"default": True, "action": f"{ING}.classifier.miss_fixed", "params": {"lane": ir.miss.lane}}
        )
    for s in ir.slices:
        q = qos_entry(s.slice_id, s.qos, mode)
        if q is not None:
            out[SLICE_QOS].append(q)
        m = meter_entry(s.slice_id, s.qos) if mode == "meter" else None
        if m is not None:
            out[SLICE_METER].append(m)
    for name, entries in out.items():
        used = sum(1 for e in entries if not e.get("default"))
        if name in sizes and used > sizes[name]:
            raise CapacityError(name, used, sizes[name])
    return {k: sorted(v, key=entry_sort_key) for k, v in out.items()}


def _exact(match: dict[str, int], action: str, params: dict[str, int]) -> NativeEntry:
    return {
        "match": {k: [v, -1] for k, v in match.items()},
        "priority": 0,
        "action": action,
        "params": params,
    }


def _fwd(tid: int, in_port: int, out_port: int) -> NativeEntry:
    return _exact({"tenant_id": tid, "ingress_port": in_port}, f"{ING}.fwd.forward", {"port": out_port})


def entry_sort_key(e: NativeEntry) -> bytes:
    # the order json.dumps(e, sort_keys=True) gave (stored plans keep theirs): compact text
    # of ASCII names and integers sorts as the spaced text does, at a tenth of its cost
    return canonical(e)


def with_full_masks(
    entries: dict[str, list[NativeEntry]], widths: dict[str, dict[str, int]]
) -> dict[str, list[NativeEntry]]:
    """Replace the -1 placeholder of exact fields by the field's full mask."""
    out: dict[str, list[NativeEntry]] = {}
    for table, lst in entries.items():
        fixed = []
        for e in lst:
            if "match" in e:
                m: dict[str, Any] = {
                    k: [v[0], (1 << widths[table][k]) - 1 if v[1] == -1 else v[1]] for k, v in e["match"].items()
                }
                e = {**e, "match": m}
            fixed.append(e)
        out[table] = sorted(fixed, key=entry_sort_key)
    return out


assert set(FIELD_WIDTHS) >= {"vni", "teid", "vlan", "src_ip", "dst_ip", "dst_port", "dscp"}
