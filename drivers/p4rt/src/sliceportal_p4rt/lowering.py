"""IR -> P4Runtime entries of slicing.p4, in the driver's normal form (pure, no I/O).

Normal form of one entry (JSON-serialisable, as ``read_state`` reproduces it):
``{"match": {field: [value, mask]}, "priority": p, "action": name, "params": {name: v}}``
with exact fields as ``[value, full_mask]`` and wildcards omitted; a table's default
entry as ``{"default": true, "action": ..., "params": ...}``; a meter cell as
``{"index": i, "cir": .., "cburst": .., "pir": .., "pburst": ..}``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from sliceportal.drivers.contract import CapacityError, DriverError, NativeEntry
from sliceportal.rules.ir import FIELD_WIDTHS, MissMode, Qos, RuleIR

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

# Rule i gets priority PRIORITY_BASE - i: higher wins in P4Runtime, first rule wins in the IR.
PRIORITY_BASE = 1 << 20
UNLIMITED_NS = (1 << 32) - 1


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


def lower_ir(
    ir: RuleIR, ports: PortPlan, mode: str, lanes: int, sizes: dict[str, int]
) -> dict[str, list[NativeEntry]]:
    tenants = {t.vni: i for i, t in enumerate(ir.tenants, start=1)}
    if len(tenants) > 255:
        raise CapacityError("tenants", len(tenants), 255)
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
        out[CLASSIFIER].append(
            {
                "match": match,
                "priority": PRIORITY_BASE - i,
                "action": f"{ING}.classifier.set_slice",
                "params": {"slice_id": rule.action.slice_id, "lane": rule.action.lane},
            }
        )
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


def entry_sort_key(e: NativeEntry) -> str:
    import json

    return json.dumps(e, sort_keys=True)


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
                    k: [v[0], (1 << widths[table][k]) - 1 if v[1] == -1 else v[1]]
                    for k, v in e["match"].items()
                }
                e = {**e, "match": m}
            fixed.append(e)
        out[table] = sorted(fixed, key=entry_sort_key)
    return out


assert set(FIELD_WIDTHS) >= {"vni", "teid", "vlan", "src_ip", "dst_ip", "dst_port", "dscp"}
