"""slicing.p4's parser over raw bytes: where each header starts, and the flow key.

Mirrors include/parser.p4 state by state. A truncated header stops parsing as v1model
does (the packet continues with parser_error set and what was extracted so far).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

ETHERTYPE_IPV4, ETHERTYPE_VLAN = 0x0800, 0x8100
PROTO_TCP, PROTO_UDP = 6, 17
UDP_VXLAN, UDP_GTPU = 4789, 2152


@dataclass(slots=True)
class Parsed:
    vlan: int = -1  # offset of each header, -1 = invalid
    ipv4: int = -1
    udp: int = -1
    vxlan: int = -1
    inner_ipv4: int = -1
    inner_udp: int = -1
    gtpu: int = -1
    ue_ipv4: int = -1
    l4: int = -1
    error: bool = False
    end: int = 0  # bytes of the frame the parse looked at (docs/packets.md netfpga-window)


def _ipv4(data: bytes, off: int) -> tuple[int, int] | None:
    """(ihl, protocol) of the IPv4 header at ``off``, None when truncated."""
    if off + 20 > len(data):
        return None
    return data[off] & 0x0F, data[off + 9]


def parse(data: bytes) -> Parsed:
    p = Parsed()
    n = len(data)
    if n < 14:
        p.error = True
        return p
    off, etype = 14, struct.unpack_from("!H", data, 12)[0]
    if etype == ETHERTYPE_VLAN:
        if n < 18:
            p.error = True
            return p
        p.vlan, etype, off = 14, struct.unpack_from("!H", data, 16)[0], 18
    if etype != ETHERTYPE_IPV4:
        return p
    hdr = _ipv4(data, off)
    if hdr is None:
        p.error = True
        return p
    p.ipv4 = off
    ihl, proto = hdr
    off += 20
    if ihl != 5:
        return p
    if proto == PROTO_TCP:
        return _l4(p, data, off)
    if proto != PROTO_UDP:
        return p
    if off + 8 > n:
        p.error = True
        return p
    p.udp = off
    dport = struct.unpack_from("!H", data, off + 2)[0]
    off += 8
    if dport == UDP_GTPU:
        return _gtpu(p, data, off)
    if dport != UDP_VXLAN:
        return p
    # parse_vxlan extracts VXLAN and the inner Ethernet together.
    if off + 8 + 14 > n:
        p.error = True
        return p
    p.vxlan = off
    off += 8
    inner_etype = struct.unpack_from("!H", data, off + 12)[0]
    off += 14
    if inner_etype != ETHERTYPE_IPV4:
        return p
    hdr = _ipv4(data, off)
    if hdr is None:
        p.error = True
        return p
    p.inner_ipv4 = off
    ihl, proto = hdr
    off += 20
    if ihl != 5:
        return p
    if proto == PROTO_TCP:
        return _l4(p, data, off)
    if proto != PROTO_UDP:
        return p
    if off + 8 > n:
        p.error = True
        return p
    p.inner_udp = off
    dport = struct.unpack_from("!H", data, off + 2)[0]
    off += 8
    return _gtpu(p, data, off) if dport == UDP_GTPU else p


def _gtpu(p: Parsed, data: bytes, off: int) -> Parsed:
    if off + 8 > len(data):
        p.error = True
        return p
    p.gtpu = off
    flags, msgtype = data[off], data[off + 1]
    off += 8
    if msgtype != 255:
        return p
    if flags & 0x07:
        if off + 4 > len(data):
            p.error = True
            return p
        next_ext = data[off + 3]
        off += 4
        if next_ext != 0:
            return p
    # parse_ue_ipv4_version: lookahead of the version nibble.
    if off + 1 > len(data):
        p.error = True
        return p
    if data[off] >> 4 != 4:
        return p
    hdr = _ipv4(data, off)
    if hdr is None:
        p.error = True
        return p
    p.ue_ipv4 = off
    ihl, proto = hdr
    off += 20
    if ihl == 5 and proto in (PROTO_UDP, PROTO_TCP):
        return _l4(p, data, off)
    return p


def _l4(p: Parsed, data: bytes, off: int) -> Parsed:
    if off + 4 > len(data):
        p.error = True
        return p
    p.l4 = off
    return p


@dataclass(slots=True)
class Key:
    """include/flow_key.p4's flow_key_t."""

    has_ip: int = 0
    src_ip: int = 0
    dst_ip: int = 0
    dst_port: int = 0
    dscp: int = 0
    has_vni: int = 0
    vni: int = 0
    has_teid: int = 0
    teid: int = 0
    has_vlan: int = 0
    vlan: int = 0


def _port(data: bytes, off: int) -> int:
    return int(struct.unpack_from("!H", data, off + 2)[0])


def flow_key(p: Parsed, data: bytes) -> Key:
    k = Key()
    ip = p.ue_ipv4 if p.ue_ipv4 >= 0 else p.inner_ipv4 if p.inner_ipv4 >= 0 else p.ipv4
    if ip >= 0:
        k.has_ip = 1
        k.src_ip, k.dst_ip = struct.unpack_from("!II", data, ip + 12)
        k.dscp = data[ip + 1] >> 2
        if p.ue_ipv4 >= 0:
            l4 = p.l4
        elif p.inner_ipv4 >= 0:
            l4 = p.inner_udp if p.inner_udp >= 0 else p.l4
        else:
            l4 = p.udp if p.udp >= 0 else p.l4
        if l4 >= 0:
            k.dst_port = _port(data, l4)
    if p.vxlan >= 0:
        k.has_vni, k.vni = 1, int.from_bytes(data[p.vxlan + 4 : p.vxlan + 7], "big")
    if p.gtpu >= 0:
        k.has_teid, k.teid = 1, struct.unpack_from("!I", data, p.gtpu + 4)[0]
    if p.vlan >= 0:
        k.has_vlan, k.vlan = 1, struct.unpack_from("!H", data, p.vlan)[0] & 0x0FFF
    return k


def ipv4_checksum(header: bytes | bytearray) -> int:
    total = 0
    for (word,) in struct.iter_unpack("!H", bytes(header[:10]) + b"\0\0" + bytes(header[12:20])):
        total += word
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
