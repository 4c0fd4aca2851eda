"""Packet builders for the multi-tenant 5G format (seed 000 Fig. 3, seed 001 §4.1).

Full format: outer Ethernet / IPv4 / UDP 4789 / VXLAN (VNI = tenant) / inner Ethernet /
IPv4 / UDP 2152 / GTP-U (TEID) / innermost IPv4 (UE) / UDP or TCP (service) / payload.
Every data plane must also take plain, VXLAN-only and GTP-only packets, so ``Encap``
selects which layers are present. These builders are the shared test vectors of the
data planes: their tests craft packets here and compare against ``RuleIR.classify``.
"""

from __future__ import annotations

import ipaddress
from dataclasses import dataclass
from enum import StrEnum

from scapy.contrib.gtp import GTP_U_Header
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw

from sliceportal.rules.ir import FlowKey
from sliceportal.traffic.wire import GTPU_PORT as GTPU_PORT
from sliceportal.traffic.wire import PAYLOAD_HEADER as PAYLOAD_HEADER
from sliceportal.traffic.wire import PAYLOAD_MAGIC as PAYLOAD_MAGIC
from sliceportal.traffic.wire import VXLAN_PORT as VXLAN_PORT


class Encap(StrEnum):
    PLAIN = "plain"  # Ethernet / IPv4 / L4
    VXLAN = "vxlan"  # ... / VXLAN / Ethernet / IPv4 / L4
    GTP = "gtp"  # ... / UDP 2152 / GTP-U / IPv4 / L4
    VXLAN_GTP = "vxlan_gtp"  # the full 5G multi-tenant format


@dataclass(frozen=True, slots=True)
class Flow:
    """One 5G user flow: innermost addresses and service, plus its tunnels."""

    src_ip: str  # UE address (innermost source)
    dst_ip: str
    dst_port: int
    dscp: int = 0
    src_port: int = 40000
    proto: str = "udp"  # "udp" | "tcp"
    vni: int = 0
    teid: int = 0
    vlan: int | None = None
    encap: Encap = Encap.VXLAN_GTP

    def key(self) -> FlowKey:
        """What a correct parser extracts from this flow's packets."""
        has_vxlan = self.encap in (Encap.VXLAN, Encap.VXLAN_GTP)
        has_gtp = self.encap in (Encap.GTP, Encap.VXLAN_GTP)
        return FlowKey(
            src_ip=int(ipaddress.IPv4Address(self.src_ip)),
            dst_ip=int(ipaddress.IPv4Address(self.dst_ip)),
            dst_port=self.dst_port,
            dscp=self.dscp,
            vni=self.vni if has_vxlan else None,
            teid=self.teid if has_gtp else None,
            vlan=self.vlan,
        )


@dataclass(frozen=True, slots=True)
class Underlay:
    """Addresses of the outer headers (edge -> core) and of the tunnel endpoints."""

    src_mac: str = "02:00:00:00:00:01"
    dst_mac: str = "02:00:00:00:00:02"
    outer_src: str = "10.10.0.1"
    outer_dst: str = "10.10.0.2"
    gnb_ip: str = "10.20.0.1"  # GTP-U tunnel source (inside VXLAN when nested)
    upf_ip: str = "10.20.0.2"


def payload(flow_id: int, seq: int, send_ns: int, size: int) -> bytes:
    head = PAYLOAD_HEADER.pack(PAYLOAD_MAGIC, flow_id, seq, send_ns)
    return head + bytes(max(0, size - len(head)))


def parse_payload(data: bytes) -> tuple[int, int, int] | None:
    """(flow id, sequence, send time ns) from a payload, or None if it is not ours."""
    if len(data) < PAYLOAD_HEADER.size:
        return None
    magic, flow_id, seq, send_ns = PAYLOAD_HEADER.unpack_from(data)
    return (flow_id, seq, send_ns) if magic == PAYLOAD_MAGIC else None


def build(flow: Flow, data: bytes = b"", underlay: Underlay = Underlay()) -> Packet:
    """The packet of ``flow`` carrying ``data`` as its innermost payload."""
    l4: Packet = (
        TCP(sport=flow.src_port, dport=flow.dst_port, flags="A")
        if flow.proto == "tcp"
        else UDP(sport=flow.src_port, dport=flow.dst_port)
    )
    inner: Packet = IP(src=flow.src_ip, dst=flow.dst_ip, tos=flow.dscp << 2) / l4 / Raw(data)
    if flow.encap in (Encap.GTP, Encap.VXLAN_GTP):
        inner = (
            IP(src=underlay.gnb_ip, dst=underlay.upf_ip)
            / UDP(sport=GTPU_PORT, dport=GTPU_PORT)
            / GTP_U_Header(teid=flow.teid, gtp_type=255)
            / inner
        )
    if flow.encap in (Encap.VXLAN, Encap.VXLAN_GTP):
        inner = (
            IP(src=underlay.outer_src, dst=underlay.outer_dst)
            / UDP(sport=49152 + (flow.vni & 0x3FFF), dport=VXLAN_PORT)
            / VXLAN(vni=flow.vni, flags=0x08)
            / Ether(src="02:00:00:00:01:01", dst="02:00:00:00:01:02")
            / inner
        )
    eth = Ether(src=underlay.src_mac, dst=underlay.dst_mac)
    if flow.vlan is not None:
        return eth / Dot1Q(vlan=flow.vlan) / inner
    return eth / inner


def build_bytes(flow: Flow, data: bytes = b"", underlay: Underlay = Underlay()) -> bytes:
    return bytes(build(flow, data, underlay))
