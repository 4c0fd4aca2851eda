"""Frames for thousands of flows fast: scapy builds one frame per shape, the rest are patched.

Building a nested frame with scapy costs ~2 ms, so a 16-slice Table 3 scenario (8192 flows)
took ~16 s to set up. Flows of one shape (same layers, same frame size) differ only in a few
header fields, so scapy builds one base frame per shape, locates its layers, and each flow's
frame is the base with its fields written in and every checksum that covers them recomputed
(innermost IPv4 header, innermost L4, and each enclosing UDP: GTP-U's and VXLAN's). The
tests compare every patched frame byte for byte with scapy building it from scratch.
"""

from __future__ import annotations

import socket
import struct
from collections.abc import Sequence
from dataclasses import dataclass

from scapy.contrib.gtp import GTP_U_Header
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import Dot1Q
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet

from sliceportal.traffic.packets import Flow, Underlay, build, payload
from sliceportal.traffic.scenarios import ScenarioFlow, header_len

_H = struct.Struct("!H")
_I = struct.Struct("!I")


@dataclass(frozen=True, slots=True)
class _Layout:
    """Where the per-flow fields and the checksums covering them sit in a shape's frames."""

    base: bytes
    vlan_tci: int | None  # offset of the 802.1Q TCI
    vxlan_udp: int | None  # offset of the VXLAN UDP header (its sport depends on the VNI)
    vxlan_ip: int | None  # the IPv4 header that carries that UDP
    vxlan: int | None
    gtp_udp: int | None
    gtp_ip: int | None
    gtp: int | None
    ue_ip: int
    l4: int
    is_udp: bool
    payload: int


def _offsets(pkt: Packet) -> list[tuple[Packet, int]]:
    total = len(bytes(pkt))
    out: list[tuple[Packet, int]] = []
    layer: Packet | None = pkt
    while layer is not None and layer.name != "NoPayload":
        out.append((layer, total - len(bytes(layer))))
        layer = layer.payload
    return out


def _layout(flow: Flow, frame_size: int, underlay: Underlay) -> _Layout:
    size = frame_size - header_len(flow, underlay)
    pkt = build(flow, payload(0, 0, 0, size), underlay)
    layers = _offsets(pkt)
    kinds = [type(layer) for layer, _ in layers]
    at = [off for _, off in layers]

    def before(cls: type, idx: int) -> int | None:
        """Offset of the last ``cls`` layer before layer index ``idx``."""
        for i in range(idx - 1, -1, -1):
            if kinds[i] is cls:
                return at[i]
        return None

    ue_idx = max(i for i, k in enumerate(kinds) if k is IP)
    l4_idx = ue_idx + 1
    vx_idx = kinds.index(VXLAN) if VXLAN in kinds else None
    gtp_idx = kinds.index(GTP_U_Header) if GTP_U_Header in kinds else None
    return _Layout(
        base=bytes(pkt),
        vlan_tci=at[kinds.index(Dot1Q)] if Dot1Q in kinds else None,
        vxlan_udp=before(UDP, vx_idx) if vx_idx is not None else None,
        vxlan_ip=before(IP, vx_idx) if vx_idx is not None else None,
        vxlan=at[vx_idx] if vx_idx is not None else None,
        gtp_udp=before(UDP, gtp_idx) if gtp_idx is not None else None,
        gtp_ip=before(IP, gtp_idx) if gtp_idx is not None else None,
        gtp=at[gtp_idx] if gtp_idx is not None else None,
        ue_ip=at[ue_idx],
        l4=at[l4_idx],
        is_udp=kinds[l4_idx] is UDP,
        payload=at[l4_idx + 1],
    )


def _ones_sum(data: bytes | bytearray) -> int:
    """One's complement sum of 16-bit words: the value modulo 0xFFFF (0xFFFF for nonzero ≡ 0)."""
    if len(data) % 2:
        data = bytes(data) + b"\x00"
    value = int.from_bytes(data, "big")
    return value % 0xFFFF or (0xFFFF if value else 0)


def _ip_checksum(buf: bytearray, ip: int) -> None:
    ihl = (buf[ip] & 0x0F) * 4
    buf[ip + 10 : ip + 12] = b"\x00\x00"
    buf[ip + 10 : ip + 12] = _H.pack(0xFFFF - _ones_sum(buf[ip : ip + ihl]))


def _l4_checksum(buf: bytearray, ip: int, l4: int, proto: int, csum_at: int) -> None:
    """Checksum of the L4 segment at ``l4`` (to the IPv4 packet's end) under header ``ip``."""
    end = ip + _H.unpack_from(buf, ip + 2)[0]
    length = end - l4
    buf[l4 + csum_at : l4 + csum_at + 2] = b"\x00\x00"
    pseudo = bytes(buf[ip + 12 : ip + 20]) + bytes((0, proto)) + _H.pack(length)
    csum = 0xFFFF - _ones_sum(pseudo + bytes(buf[l4:end]))
    if proto == 17 and csum == 0:
        csum = 0xFFFF
    buf[l4 + csum_at : l4 + csum_at + 2] = _H.pack(csum)


def _patch(lay: _Layout, sf: ScenarioFlow) -> bytes:
    f = sf.flow
    buf = bytearray(lay.base)
    if lay.vlan_tci is not None and f.vlan is not None:
        tci = _H.unpack_from(buf, lay.vlan_tci)[0]
        _H.pack_into(buf, lay.vlan_tci, (tci & 0xF000) | (f.vlan & 0x0FFF))
    if lay.vxlan is not None and lay.vxlan_udp is not None:
        _H.pack_into(buf, lay.vxlan_udp, 49152 + (f.vni & 0x3FFF))  # as packets.build sets it
        buf[lay.vxlan + 4 : lay.vxlan + 7] = (f.vni & 0xFFFFFF).to_bytes(3, "big")
    if lay.gtp is not None:
        _I.pack_into(buf, lay.gtp + 4, f.teid)
    ue = lay.ue_ip
    buf[ue + 1] = (f.dscp << 2) & 0xFF
    buf[ue + 12 : ue + 16] = socket.inet_aton(f.src_ip)
    buf[ue + 16 : ue + 20] = socket.inet_aton(f.dst_ip)
    _H.pack_into(buf, lay.l4, f.src_port)
    _H.pack_into(buf, lay.l4 + 2, f.dst_port)
    _I.pack_into(buf, lay.payload + 2, sf.flow_id)
    # innermost first: each checksum covers the ones inside it
    _ip_checksum(buf, ue)
    _l4_checksum(buf, ue, lay.l4, 17 if lay.is_udp else 6, 6 if lay.is_udp else 16)
    if lay.gtp_udp is not None and lay.gtp_ip is not None:
        _l4_checksum(buf, lay.gtp_ip, lay.gtp_udp, 17, 6)
    if lay.vxlan_udp is not None and lay.vxlan_ip is not None:
        _l4_checksum(buf, lay.vxlan_ip, lay.vxlan_udp, 17, 6)
    return bytes(buf)


def zero_stamp_frames(flows: Sequence[ScenarioFlow], underlay: Underlay) -> list[bytes]:
    """Each flow's frame with sequence 0 and send time 0, identical to what scapy builds."""
    layouts: dict[tuple[str, str, bool, int], _Layout] = {}
    frames = []
    for sf in flows:
        shape = (sf.flow.encap, sf.flow.proto, sf.flow.vlan is not None, sf.frame_size)
        lay = layouts.get(shape)
        if lay is None:
            lay = layouts[shape] = _layout(sf.flow, sf.frame_size, underlay)
        frames.append(_patch(lay, sf))
    return frames
