"""Traffic scenarios of the papers as lists of flows, each tagged with its slice and lane.

Address plan (shared with ``rules/scenarios.py``, which builds the configurations for the
same scenarios; keep the two in step through the constants below):

- slice ``s`` (0-based) is the UE subnet ``10.45.s.0/24``; its users are ``10.45.s.1`` …
  ``10.45.s.32`` (user ``u`` is 1-based);
- tenant VNI ``1000 + s``; GTP-U TEID ``(s << 16) | u``;
- every user reaches the same service host ``10.46.0.1`` on 16 services: UDP dst ports
  5000 … 5030 step 2, DSCP assigned round robin 0-7 over the services (seed 000 §5.3);
- service ``k`` (0-based) has catalogue priority ``k // 2`` (8 QoS requirements, seed 000
  §6.1) which folds onto the 4-lane prototype as ``k // 4`` — exactly seed 000 Table 2
  (ports 5000-5006 → queue 0 … 5024-5030 → queue 3).

Seed 001 Table 1 loads: one slice, 16 users each with one service, the users with the 8
lowest TEIDs prioritised (seed 001 selects prioritised services by TEID), all at the same
packet rate, at the frame sizes of the table.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import lru_cache

from sliceportal.rules.ir import CATALOGUE_LANES, fold_lane
from sliceportal.traffic.packets import PAYLOAD_HEADER, Encap, Flow, Underlay, build

UE_NET_PREFIX = "10.45"  # slice s users: 10.45.s.1 … 10.45.s.USERS_PER_SLICE
SERVICE_HOST = "10.46.0.1"
USERS_PER_SLICE = 32
SERVICES = 16
BASE_PORT = 5000
PORT_STEP = 2
DSCP_VALUES = 8  # round robin 0 … 7 over the services
VNI_BASE = 1000
TABLE3_SLICES = (1, 2, 4, 8, 16)
TABLE3_FRAME_SIZE = 1500
# Seed 001 Table 1: frame size (bytes) -> offered load (Mpps) in the paper.
TABLE1_LOADS: dict[int, float] = {1500: 2.2, 1280: 2.6, 1024: 3.2, 512: 6.5, 256: 12.0, 132: 18.0}
TABLE1_PRIO_SERVICES = 8
DEFAULT_UNDERLAY = Underlay()


def user_ip(slice_index: int, user: int) -> str:
    return f"{UE_NET_PREFIX}.{slice_index}.{user}"


def slice_vni(slice_index: int) -> int:
    return VNI_BASE + slice_index


def user_teid(slice_index: int, user: int) -> int:
    return (slice_index << 16) | user


def service_port(service: int) -> int:
    return BASE_PORT + PORT_STEP * service


def service_dscp(service: int) -> int:
    return service % DSCP_VALUES


def service_priority(service: int) -> int:
    """Catalogue priority (0-7) of a Table 3 service: 16 services in 8 QoS requirements."""
    return service * CATALOGUE_LANES // SERVICES


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


def table3(
    slices: int, users: int = USERS_PER_SLICE, frame_size: int = TABLE3_FRAME_SIZE
) -> list[ScenarioFlow]:
    """Seed 000 Table 3: ``slices`` x ``users`` x 16 services, flow ids 0 … n-1."""
    if not 1 <= slices <= 256:
        raise ScenarioError(f"slices must be 1 … 256 (Table 3 uses {TABLE3_SLICES}), got {slices}")
    if not 1 <= users <= 254:
        raise ScenarioError(f"users per slice must be 1 … 254, got {users}")
    flows: list[ScenarioFlow] = []
    for s in range(slices):
        for u in range(1, users + 1):
            for k in range(SERVICES):
                flow = Flow(
                    src_ip=user_ip(s, u),
                    dst_ip=SERVICE_HOST,
                    dst_port=service_port(k),
                    dscp=service_dscp(k),
                    vni=slice_vni(s),
                    teid=user_teid(s, u),
                    encap=Encap.VXLAN_GTP,
                )
                flows.append(
                    ScenarioFlow(len(flows), flow, s, u, k, service_priority(k), frame_size=frame_size)
                )
    check_frame_sizes(flows)
    return flows


def table1(
    frame_size: int, services: int = SERVICES, prio_services: int = TABLE1_PRIO_SERVICES
) -> list[ScenarioFlow]:
    """Seed 001 Table 1 load at ``frame_size``: 16 users/services, the first 8 TEIDs prioritised.

    Frames below what the payload header needs are raised to it (132 B -> 150 B, see
    ``table1_frame_size``).

    Prioritised flows are expected in lane 7 (the top catalogue lane), the rest in lane 0;
    a data plane that follows seed 001 accepts the former and sends the latter to the alt node.
    """
    if not 1 <= prio_services <= services <= 254:
        raise ScenarioError(f"need 1 <= prio_services <= services <= 254, got {prio_services}/{services}")
    frame = table1_frame_size(frame_size)
    flows: list[ScenarioFlow] = []
    for k in range(services):
        u = k + 1
        prioritised = k < prio_services
        flow = Flow(
            src_ip=user_ip(0, u),
            dst_ip=SERVICE_HOST,
            dst_port=service_port(k % SERVICES),
            dscp=service_dscp(k),
            vni=slice_vni(0),
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
        floor = min_frame_size(sf.flow)
        if sf.frame_size < floor:
            raise ScenarioError(
                f"frame size {sf.frame_size} B is below the {floor} B minimum of flow {sf.flow_id} "
                f"({sf.flow.encap} headers + {PAYLOAD_HEADER.size} B payload header)"
            )


def table1_frame_size(paper_size: int) -> int:
    """The frame size we send for a seed 001 load: the paper's, raised to what our stamp needs."""
    probe = table1_flows_probe()
    return max(paper_size, min_frame_size(probe))


def table1_flows_probe() -> Flow:
    return Flow(user_ip(0, 1), SERVICE_HOST, BASE_PORT, vni=slice_vni(0), teid=user_teid(0, 1))
