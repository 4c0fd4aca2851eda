"""Seed 000 Table 3 scenarios as compiler input and as flows (tests, bench, traffic reuse them).

1, 2, 4, 8 or 16 slices, each a Flexible Slice (catalogue lanes 0/2/4/6) whose 32 users
sit in one subnet and each send to 16 services on UDP 5000-5030 step 2. Seed 000 Table 2
puts ports 5000-5006 in prio queue 0, 5008-5014 in 1, 5016-5022 in 2 and 5024-5030 in 3
of the 4-lane prototype: catalogue lanes 0, 2, 4, 6 folded by >> 1. The packets carry a
DSCP assigned round-robin 0-7 per port, but the rules key on the port (seed 000 §5.2:
"it has been intentionally decided to use the port and not the DSCP value").

Slice k (0-based) uses the subnet 10.0.k.0/24 and its users the aligned block
10.0.k.32-10.0.k.63, so the 32 users of a slice are exactly one /27.
"""

from __future__ import annotations

from dataclasses import dataclass

from sliceportal.rules.ir import FlowKey, MissPolicy, Qos
from sliceportal.rules.spec import PathMode, ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec

TABLE3_SLICES: tuple[int, ...] = (1, 2, 4, 8, 16)
USERS_PER_SLICE = 32
SERVICE_PORTS: tuple[int, ...] = tuple(range(5000, 5031, 2))  # 16 services
FLEXIBLE_SLICE_LANES: tuple[int, ...] = (0, 2, 4, 6)  # seed 000 Table 1
TENANT_VNI = 0x445  # Listing 1 of seed 001 uses VXLAN id 00000445
SERVER_IP = (10 << 24) | (100 << 16) | 1  # 10.100.0.1, the core-side service address
NETFPGA_TARGET = TargetSpec(
    lanes=4,
    paths=8,
    match_fields=frozenset({"src_ip", "dst_ip", "dst_port", "dscp"}),  # seed 000's 83-bit key
    max_rules=64,
    miss=MissPolicy(),
)


def ue_ip(slice_index: int, user: int) -> int:
    return (10 << 24) | (slice_index << 8) | (32 + user)


def service_lane(port: int) -> int:
    """Catalogue lane of a Table 2 port: groups of four ports to lanes 0, 2, 4, 6."""
    return FLEXIBLE_SLICE_LANES[(port - SERVICE_PORTS[0]) // 8]


def service_dscp(port: int) -> int:
    return ((port - SERVICE_PORTS[0]) // 2) % 8  # round robin 0-7 over the ports


def table3_config(
    n_slices: int, *, path_mode: PathMode = "per_slice", users: int = USERS_PER_SLICE
) -> tuple[tuple[TenantSpec, ...], tuple[SliceSpec, ...]]:
    if not 1 <= n_slices <= 256:
        raise ValueError("n_slices must be within 1..256 (one /24 per slice in 10.0.0.0/16)")
    if not 1 <= users <= 32:
        raise ValueError("users must be within 1..32 (one /27 per slice)")
    tenant = TenantSpec(ref=1, name="tenant-a", vni=TENANT_VNI)
    services = tuple(
        ServiceSpec(name=f"udp-{p}", lane=service_lane(p), dst_ports=((p, p),), protocol="udp") for p in SERVICE_PORTS
    )
    slices = tuple(
        SliceSpec(
            ref=k + 1,
            name=f"flexible-{k + 1}",
            tenant_ref=tenant.ref,
            type_lanes=FLEXIBLE_SLICE_LANES,
            qos=Qos(),
            services=services,
            subscribers=tuple(
                SubscriberSpec(
                    ref=k * users + u + 1,
                    imsi=f"00101{k * users + u:010d}",
                    ue_ip=ue_ip(k, u),
                    teids=(0x10000 + k * users + u,),
                )
                for u in range(users)
            ),
            path_mode=path_mode,
        )
        for k in range(n_slices)
    )
    return (tenant,), slices


@dataclass(frozen=True, slots=True)
class ScenarioFlow:
    slice_index: int
    user: int
    dst_port: int
    dscp: int
    ue_ip: int
    teid: int

    def key(self) -> FlowKey:
        return FlowKey(
            src_ip=self.ue_ip,
            dst_ip=SERVER_IP,
            dst_port=self.dst_port,
            dscp=self.dscp,
            vni=TENANT_VNI,
            teid=self.teid,
        )


def table3_flows(n_slices: int, users: int = USERS_PER_SLICE) -> list[ScenarioFlow]:
    """Every flow of a scenario: slices x users x 16 services (8 192 for 16 slices)."""
    return [
        ScenarioFlow(k, u, p, service_dscp(p), ue_ip(k, u), 0x10000 + k * users + u)
        for k in range(n_slices)
        for u in range(users)
        for p in SERVICE_PORTS
    ]
