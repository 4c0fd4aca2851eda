"""Traffic scenarios of the papers as lists of flows, each tagged with its slice and lane.

Seed 000 Table 3 uses the address plan of the rule compiler's ``rules/scenarios.py`` (which
builds the configurations for the same scenarios), imported from there so the two cannot
drift apart:

- one tenant, VXLAN VNI 0x445 (seed 001 Listing 1); slice ``k`` (0-based) is the UE subnet
  ``10.0.k.0/24`` and its 32 users (0-based ``u``) are the aligned /27 ``10.0.k.32`` …
  ``10.0.k.63``; GTP-U TEID ``0x10000 + k * users + u``;
- every user reaches the service host ``10.100.0.1`` on 16 services: UDP dst ports
  5000 … 5030 step 2, DSCP assigned round robin 0-7 over the services (seed 000 §5.3);
- the services' catalogue lanes are the Flexible Slice's 0/2/4/6, four ports each, which
  fold onto the 4-lane prototype as seed 000 Table 2 (5000-5006 -> queue 0 … 5024-5030 -> 3).

Seed 001 Table 1 loads: one slice of the same plan, 16 users each with one service, the
users with the 8 lowest TEIDs prioritised (seed 001 selects prioritised services by TEID),
all at the same packet rate, at the frame sizes of the table.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from functools import lru_cache

from sliceportal.rules import scenarios as rules_scenarios
from sliceportal.rules.ir import CATALOGUE_LANES, fold_lane
from sliceportal.traffic.packets import PAYLOAD_HEADER, Encap, Flow, Underlay, build

USERS_PER_SLICE = rules_scenarios.USERS_PER_SLICE
SERVICE_PORTS = rules_scenarios.SERVICE_PORTS
SERVICES = len(SERVICE_PORTS)
TENANT_VNI = rules_scenarios.TENANT_VNI
SERVICE_HOST = str(ipaddress.IPv4Address(rules_scenarios.SERVER_IP))
TEID_BASE = 0x10000
TABLE3_SLICES = rules_scenarios.TABLE3_SLICES
TABLE3_FRAME_SIZE = 1500
# Seed 001 Table 1: frame size (bytes) -> offered load (Mpps) in the paper.
TABLE1_LOADS: dict[int, float] = {1500: 2.2, 1280: 2.6, 1024: 3.2, 512: 6.5, 256: 12.0, 132: 18.0}
TABLE1_PRIO_SERVICES = 8
DEFAULT_UNDERLAY = Underlay()
MAX_FRAME_SIZE = 9216  # jumbo frames; veth MTU must be raised to send above 1514


def user_ip(slice_index: int, user: int) -> str:
    return str(ipaddress.IPv4Address(rules_scenarios.ue_ip(slice_index, user)))


def user_teid(slice_index: int, user: int, users: int = USERS_PER_SLICE) -> int:
    return TEID_BASE + slice_index * users + user


def service_port(service: int) -> int:
    return SERVICE_PORTS[service]


def service_dscp(service: int) -> int:
    return rules_scenarios.service_dscp(SERVICE_PORTS[service])


def service_priority(service: int) -> int:
    """Catalogue lane (0-7) of a Table 3 service: the Flexible Slice's 0/2/4/6 by port group."""
    return rules_scenarios.service_lane(SERVICE_PORTS[service])


@dataclass(frozen=True, slots=True)
class ScenarioFlow:
    """A flow of a scenario: what to send, and where its results are aggregated."""

    flow_id: int
    flow: Flow
    slice_index: int
    user: int
    service: int
    priority: int  # catalogue lane 0-7 the flow is expected in
    prioritised: bool = True  # seed 001: accepted locally (True) or a candidate for the alt node
    frame_size: int = TABLE3_FRAME_SIZE  # Ethernet frame length without FCS

    def lane(self, target_lanes: int = CATALOGUE_LANES) -> int:
        """The expected lane on a backend with ``target_lanes`` lanes (seed 000 Table 2 on 4)."""
        return fold_lane(self.priority, target_lanes)


class ScenarioError(ValueError):
    """A scenario that cannot be built as asked (bad slice count, frame too small …)."""


def table3(slices: int, users: int = USERS_PER_SLICE, frame_size: int = TABLE3_FRAME_SIZE) -> list[ScenarioFlow]:
    """Seed 000 Table 3: ``slices`` x ``users`` x 16 services, flow ids 0 … n-1."""
    if not 1 <= slices <= 256:
        raise ScenarioError(f"slices must be 1 … 256 (Table 3 uses {TABLE3_SLICES}), got {slices}")
    if not 1 <= users <= 32:
        raise ScenarioError(f"users per slice must be 1 … 32 (one /27 per slice), got {users}")
    flows: list[ScenarioFlow] = []
    for s in range(slices):
        for u in range(users):
            for k in range(SERVICES):
                flow = Flow(
                    src_ip=user_ip(s, u),
                    dst_ip=SERVICE_HOST,
                    dst_port=service_port(k),
                    dscp=service_dscp(k),
                    vni=TENANT_VNI,
                    teid=user_teid(s, u, users),
                    encap=Encap.VXLAN_GTP,
                )
                flows.append(ScenarioFlow(len(flows), flow, s, u, k, service_priority(k), frame_size=frame_size))
    check_frame_sizes(flows)
    return flows


def table1(frame_size: int, services: int = SERVICES, prio_services: int = TABLE1_PRIO_SERVICES) -> list[ScenarioFlow]:
    """Seed 001 Table 1 load at ``frame_size``: 16 users/services, the first 8 TEIDs prioritised.

    Frames below what the payload header needs are raised to it (132 B -> 150 B, see
    ``table1_frame_size``).

    Prioritised flows are expected in lane 7 (the top catalogue lane), the rest in lane 0;
    a data plane that follows seed 001 accepts the former and sends the latter to the alt node.
    """
    if not 1 <= prio_services <= services <= USERS_PER_SLICE:
        raise ScenarioError(f"need 1 <= prio_services <= services <= 32, got {prio_services}/{services}")
    frame = table1_frame_size(frame_size)
    flows: list[ScenarioFlow] = []
    for k in range(services):
        u = k
        prioritised = k < prio_services
        flow = Flow(
            src_ip=user_ip(0, u),
            dst_ip=SERVICE_HOST,
            dst_port=service_port(k % SERVICES),
            dscp=service_dscp(k),
            vni=TENANT_VNI,
            teid=user_teid(0, u),
            encap=Encap.VXLAN_GTP,
        )
        priority = CATALOGUE_LANES - 1 if prioritised else 0
        flows.append(ScenarioFlow(k, flow, 0, u, k, priority, prioritised, frame))
    check_frame_sizes(flows)
    return flows


@lru_cache(maxsize=64)
def _header_len(encap: Encap, proto: str, has_vlan: bool, underlay: Underlay) -> int:
    # Header bytes depend only on which layers are present, not on the field values.
    probe = Flow("10.0.0.1", "10.0.0.2", 1, proto=proto, vlan=1 if has_vlan else None, encap=encap)
    return len(build(probe, b"", underlay))


def header_len(flow: Flow, underlay: Underlay = DEFAULT_UNDERLAY) -> int:
    """Bytes of ``flow``'s frames before the innermost payload."""
    return _header_len(flow.encap, flow.proto, flow.vlan is not None, underlay)


def min_frame_size(flow: Flow, underlay: Underlay = DEFAULT_UNDERLAY) -> int:
    """The smallest frame of ``flow`` that still carries the flow id / seq / timestamp header."""
    return header_len(flow, underlay) + PAYLOAD_HEADER.size


def check_frame_sizes(flows: list[ScenarioFlow]) -> None:
    """Refuse frame sizes below the nested headers + payload header (150 B for the full format).

    Seed 001's smallest load (132 B) is below that; ``table1_frame_size`` maps it up.
    """
    for sf in flows:
        if sf.frame_size > MAX_FRAME_SIZE:
            raise ScenarioError(f"frame size {sf.frame_size} B is above the {MAX_FRAME_SIZE} B jumbo limit")
        floor = min_frame_size(sf.flow)
        if sf.frame_size < floor:
            raise ScenarioError(
                f"frame size {sf.frame_size} B is below the {floor} B minimum of flow {sf.flow_id} "
                f"({sf.flow.encap} headers + {PAYLOAD_HEADER.size} B payload header)"
            )


def table1_frame_size(paper_size: int) -> int:
    """The frame size we send for a seed 001 load: the paper's, raised to what our stamp needs."""
    probe = Flow(user_ip(0, 0), SERVICE_HOST, SERVICE_PORTS[0], vni=TENANT_VNI, teid=user_teid(0, 0))
    return max(paper_size, min_frame_size(probe))
