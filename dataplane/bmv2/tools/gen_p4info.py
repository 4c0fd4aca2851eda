"""Writes slicing.p4info.txt as p4c's P4Runtime serializer would for slicing.p4.

No p4c exists on our machines, so the P4Info is derived from this description of the
program's control-plane objects. Ids follow p4c: the entity-type prefix byte (P4Ids)
over the low 24 bits of the Jenkins one-at-a-time hash of the fully qualified name;
aliases are the shortest dotted suffix unique in the program. Keep in step with
include/*.p4; on a machine with p4c, compare with ``p4c --p4runtime-files``.

    python dataplane/bmv2/tools/gen_p4info.py > dataplane/bmv2/slicing.p4info.txt
"""

from __future__ import annotations

import sys

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

P = p4info_pb2.P4Ids
ING, EGR = "SlicingIngress", "SlicingEgress"

# (name, [(param, bitwidth)])
ACTIONS: list[tuple[str, list[tuple[str, int]]]] = [
    ("NoAction", []),
    (f"{ING}.tenant.set_access_tenant", [("tenant_id", 8), ("vid", 12)]),
    (f"{ING}.tenant.set_trunk", []),
    (f"{ING}.tenant.drop_unallocated_port", []),
    (f"{ING}.tenant.set_vlan_tenant", [("tenant_id", 8)]),
    (f"{ING}.tenant.drop_unknown_vid", []),
    (f"{ING}.classifier.set_slice", [("slice_id", 8), ("lane", 3)]),
    (f"{ING}.classifier.miss_algorithm1", [("lane_shift", 3)]),
    (f"{ING}.classifier.miss_fixed", [("lane", 3)]),
    (f"{ING}.vqueue.queue_manage", [("byte_time", 32), ("c_delay", 32), ("m_delay", 32)]),
    (f"{ING}.vqueue.meter_police", []),
    (f"{ING}.fwd.forward", [("port", 9)]),
    (f"{ING}.fwd.drop", []),
    (f"{EGR}.vlan_tag.push_tenant_vlan", []),
    (f"{EGR}.vlan_tag.pop_vlan", []),
]

E, T = p4info_pb2.MatchField.EXACT, p4info_pb2.MatchField.TERNARY
# (name, [(field, bitwidth, kind)], [actions], default-only actions, const default, size, direct)
TABLES = [
    (
        f"{ING}.tenant.port_tenant",
        [("ingress_port", 9, E)],
        [f"{ING}.tenant.set_access_tenant", f"{ING}.tenant.set_trunk"],
        [f"{ING}.tenant.drop_unallocated_port"],
        f"{ING}.tenant.drop_unallocated_port",
        64,
        None,
    ),
    (
        f"{ING}.tenant.vlan_tenant",
        [("ingress_port", 9, E), ("vlan_valid", 1, E), ("vid", 12, E)],
        [f"{ING}.tenant.set_vlan_tenant"],
        [f"{ING}.tenant.drop_unknown_vid"],
        f"{ING}.tenant.drop_unknown_vid",
        1024,
        None,
    ),
    (
        f"{ING}.classifier.classifier",
        [
            ("tenant_id", 8, E),
            ("has_vni", 1, T),
            ("vni", 24, T),
            ("has_teid", 1, T),
            ("teid", 32, T),
            ("src_ip", 32, T),
            ("dst_ip", 32, T),
            ("dst_port", 16, T),
            ("dscp", 6, T),
            ("has_vlan", 1, T),
            ("vlan", 12, T),
        ],
        [f"{ING}.classifier.set_slice"],
        [f"{ING}.classifier.miss_algorithm1", f"{ING}.classifier.miss_fixed"],
        None,
        4096,
        f"{ING}.classifier.classifier_hits",
    ),
    (
        f"{ING}.vqueue.slice_qos",
        [("slice_id", 8, E)],
        [f"{ING}.vqueue.queue_manage", f"{ING}.vqueue.meter_police"],
        ["NoAction"],
        "NoAction",
        256,
        None,
    ),
    (
        f"{ING}.fwd.tenant_forward",
        [("tenant_id", 8, E), ("ingress_port", 9, E)],
        [f"{ING}.fwd.forward"],
        [f"{ING}.fwd.drop"],
        f"{ING}.fwd.drop",
        1024,
        None,
    ),
    (
        f"{EGR}.vlan_tag.egress_vlan",
        [("egress_port", 9, E)],
        [f"{EGR}.vlan_tag.push_tenant_vlan", f"{EGR}.vlan_tag.pop_vlan"],
        ["NoAction"],
        "NoAction",
        64,
        None,
    ),
]

C = p4info_pb2.CounterSpec
COUNTERS = [
    (f"{ING}.tenant.tenant_drops", C.PACKETS, 2),
    (f"{ING}.classifier.slice_rx", C.BOTH, 256),
    (f"{ING}.classifier.malformed", C.PACKETS, 1),
    (f"{ING}.vqueue.slice_drops", C.PACKETS, 256),
    (f"{ING}.vqueue.slice_ecn_marks", C.PACKETS, 256),
    (f"{EGR}.vlan_tag.lane_tx", C.BOTH, 8),
    (f"{EGR}.vlan_tag.slice_tx", C.BOTH, 256),
]
DIRECT_COUNTERS = [(f"{ING}.classifier.classifier_hits", C.BOTH, f"{ING}.classifier.classifier")]
METERS = [(f"{ING}.vqueue.slice_meter", p4info_pb2.MeterSpec.BYTES, 256)]
REGISTERS = [
    (f"{ING}.vqueue.slice_ts", 64, 256),
    (f"{ING}.vqueue.slice_delay", 32, 256),
    (f"{ING}.vqueue.slice_delay_max", 32, 256),
]


def jenkins_one_at_a_time(name: str) -> int:
    h = 0
    for c in name.encode():
        h = (h + c) & 0xFFFFFFFF
        h = (h + (h << 10)) & 0xFFFFFFFF
        h ^= h >> 6
    h = (h + (h << 3)) & 0xFFFFFFFF
    h ^= h >> 11
    return (h + (h << 15)) & 0xFFFFFFFF


def p4c_id(prefix: int, name: str) -> int:
    return (prefix << 24) | (jenkins_one_at_a_time(name) & 0xFFFFFF)


def aliases(names: list[str]) -> dict[str, str]:
    out = {}
    for name in names:
        parts = name.split(".")
        for k in range(1, len(parts) + 1):
            suffix = ".".join(parts[-k:])
            if sum(1 for n in names if n == suffix or n.endswith("." + suffix)) == 1:
                out[name] = suffix
                break
    return out


def build() -> p4info_pb2.P4Info:
    every = (
        [a for a, _ in ACTIONS]
        + [t[0] for t in TABLES]
        + [c[0] for c in COUNTERS]
        + [d[0] for d in DIRECT_COUNTERS]
        + [m[0] for m in METERS]
        + [r[0] for r in REGISTERS]
    )
    alias = aliases(every)
    info = p4info_pb2.P4Info()
    info.pkg_info.arch = "v1model"

    def preamble(msg: p4info_pb2.Preamble, prefix: int, name: str) -> None:
        msg.id, msg.name, msg.alias = p4c_id(prefix, name), name, alias[name]

    for name, fields, actions, default_only, const_default, size, direct in TABLES:
        t = info.tables.add()
        preamble(t.preamble, P.TABLE, name)
        for i, (fname, width, kind) in enumerate(fields, start=1):
            t.match_fields.add(id=i, name=fname, bitwidth=width, match_type=kind)
        for a in actions:
            t.action_refs.add(id=p4c_id(P.ACTION, a))
        for a in default_only:
            t.action_refs.add(
                id=p4c_id(P.ACTION, a), annotations=["@defaultonly"], scope=p4info_pb2.ActionRef.DEFAULT_ONLY
            )
        if const_default:
            t.const_default_action_id = p4c_id(P.ACTION, const_default)
        if direct:
            t.direct_resource_ids.append(p4c_id(P.DIRECT_COUNTER, direct))
        t.size = size
    for name, params in ACTIONS:
        a = info.actions.add()
        preamble(a.preamble, P.ACTION, name)
        if name == "NoAction":
            a.preamble.annotations.append('@noWarn("unused")')
        for i, (pname, width) in enumerate(params, start=1):
            a.params.add(id=i, name=pname, bitwidth=width)
    for name, unit, size in COUNTERS:
        c = info.counters.add()
        preamble(c.preamble, P.COUNTER, name)
        c.spec.unit, c.size = unit, size
    for name, unit, table in DIRECT_COUNTERS:
        d = info.direct_counters.add()
        preamble(d.preamble, P.DIRECT_COUNTER, name)
        d.spec.unit, d.direct_table_id = unit, p4c_id(P.TABLE, table)
    for name, unit, size in METERS:
        m = info.meters.add()
        preamble(m.preamble, P.METER, name)
        m.spec.unit, m.size = unit, size
    for name, width, size in REGISTERS:
        r = info.registers.add()
        preamble(r.preamble, P.REGISTER, name)
        r.type_spec.bitstring.bit.bitwidth, r.size = width, size
    info.type_info.SetInParent()
    return info


if __name__ == "__main__":
    sys.stdout.write(text_format.MessageToString(build()))
