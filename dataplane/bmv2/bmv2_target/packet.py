"""slicing.p4's parser over raw bytes: where each header starts, and the flow key.

Mirrors include/parser.p4 state by state and implements docs/packets.md (the packet
semantics all three data planes share): a header that does not fit, or an IPv4 header
whose IHL / total length disagree with the frame, stops parsing with ``error`` set (v1model
continues with parser_error set and what was extracted so far); traffic that is not IPv4
user plane stops it with ``unparsed`` set. Neither is classified.
"""

from __future__ import annotations

import contextlib
import struct
from dataclasses import dataclass

ETHERTYPE_IPV4, ETHERTYPE_VLAN, ETHERTYPE_QINQ = 0x0800, 0x8100, 0x88A8
PROTO_TCP, PROTO_UDP = 6, 17
UDP_VXLAN, UDP_GTPU = 4789, 2152
GTPU_GPDU = 255
MAX_VLAN_TAGS = 2  # QinQ
MAX_GTPU_EXT = 4  # extension headers followed


@dataclass(slots=True)
class Parsed:
    vlan: int = -1  # offset of each header, -1 = invalid (vlan: the first tag's TCI)
    ipv4: int = -1
    udp: int = -1
    vxlan: int = -1
    inner_ipv4: int = -1
    inner_udp: int = -1
    gtpu: int = -1
    ue_ipv4: int = -1
    l4: int = -1
    error: bool = False  # malformed (docs/packets.md §3)
    unparsed: bool = False  # not IPv4 user plane
    end: int = 0  # bytes of the frame the parse needed (docs/packets.md netfpga-window)
    key_ip: int = -1  # the IPv4 header the flow key comes from
    key_port: int = -1  # the L4 header whose destination port is the key's, -1 = port 0


class _Stop(Exception):
    """Parsing ends here (error / unparsed already recorded)."""


class _Parser:
    def __init__(self, data: bytes) -> None:
        self.data, self.p = data, Parsed()

    def need(self, off: int, n: int) -> None:
        self.p.end = max(self.p.end, off + n)
        if off + n > len(self.data):
            self.p.error = True
            raise _Stop

    def unparsed(self) -> None:
        self.p.unparsed = True
        raise _Stop

    def u16(self, off: int) -> int:
        return int(struct.unpack_from("!H", self.data, off)[0])

    def ipv4(self, off: int) -> tuple[int, int, bool]:
        """docs/packets.md §2; (offset of the next header, protocol, later fragment)."""
        self.need(off, 20)
        version, ihl = self.data[off] >> 4, self.data[off] & 0x0F
        if version != 4 or ihl < 5:
            self.p.error = True
            raise _Stop
        self.need(off, 4 * ihl)
        total = self.u16(off + 2)
        if total < 4 * ihl or off + total > len(self.data):
            self.p.error = True
            raise _Stop
        later_fragment = self.u16(off + 6) & 0x1FFF != 0
        return off + 4 * ihl, self.data[off + 9], later_fragment

    def ports(self, off: int, proto: int, later_fragment: bool) -> int:
        """The L4 destination port of the innermost IPv4 (key_port), -1 when none."""
        if later_fragment or proto not in (PROTO_UDP, PROTO_TCP):
            return -1
        self.need(off, 4)
        return off

    def gtpu(self, off: int) -> None:
        p, d = self.p, self.data
        self.need(off, 8)
        flags, msgtype = d[off], d[off + 1]
        if flags >> 5 != 1:
            p.error = True
            raise _Stop
        p.gtpu = off
        if msgtype != GTPU_GPDU:
            return  # signalling: classified on the IPv4 / UDP 2152 that carries it
        pos = off + 8
        if flags & 0x07:
            self.need(off, 12)
            nxt = d[off + 11] if flags & 0x04 else 0
            pos = off + 12
            for _ in range(MAX_GTPU_EXT):
                if not nxt:
                    break
                self.need(pos, 1)
                length = 4 * d[pos]
                if not length:
                    p.error = True
                    raise _Stop
                self.need(pos, length)
                nxt = d[pos + length - 1]
                pos += length
            if nxt:
                p.error = True  # a fifth extension header
                raise _Stop
        self.need(pos, 1)
        if d[pos] >> 4 != 4:
            self.unparsed()  # an IPv6 UE
        nxt_off, proto, frag = self.ipv4(pos)
        p.ue_ipv4 = p.key_ip = pos
        p.key_port = p.l4 = self.ports(nxt_off, proto, frag)

    def run(self) -> None:
        p = self.p
        self.need(0, 14)
        etype, off, tags = self.u16(12), 14, 0
        while etype in (ETHERTYPE_VLAN, ETHERTYPE_QINQ):
            if tags == MAX_VLAN_TAGS:
                self.unparsed()
            self.need(off, 4)
            if tags == 0:
                p.vlan = off
            etype, off, tags = self.u16(off + 2), off + 4, tags + 1
        if etype != ETHERTYPE_IPV4:
            self.unparsed()
        nxt, proto, frag = self.ipv4(off)
        p.ipv4 = p.key_ip = off
        p.key_port = self.ports(nxt, proto, frag)
        if p.key_port < 0 or proto != PROTO_UDP:
            p.l4 = p.key_port
            return
        dport = self.u16(nxt + 2)
        if dport == UDP_GTPU:
            self.need(nxt, 8)
            p.udp = nxt
            self.gtpu(nxt + 8)
            return
        if dport != UDP_VXLAN:
            p.l4 = nxt  # parse_l4: only the ports are extracted
            return
        self.need(nxt, 16 + 14)  # UDP, VXLAN, inner Ethernet
        p.udp, p.vxlan = nxt, nxt + 8
        if self.u16(nxt + 16 + 12) != ETHERTYPE_IPV4:
            self.unparsed()  # also a tag inside the tunnel
        off = nxt + 16 + 14
        nxt, proto, frag = self.ipv4(off)
        p.inner_ipv4 = p.key_ip = off
        p.key_port = self.ports(nxt, proto, frag)
        if p.key_port < 0 or proto != PROTO_UDP:
            p.l4 = p.key_port
            return
        if self.u16(nxt + 2) != UDP_GTPU:
            p.l4 = nxt
            return
        self.need(nxt, 8)
        p.inner_udp = nxt
        self.gtpu(nxt + 8)


def parse(data: bytes) -> Parsed:
    parser = _Parser(data)
    with contextlib.suppress(_Stop):
        parser.run()
    return parser.p


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
    """The classifier key; has_ip = 0 (not classified) for malformed and unparsed frames."""
    k = Key()
    if p.error or p.unparsed:
        return k
    ip = p.key_ip
    k.has_ip = 1
    k.src_ip, k.dst_ip = struct.unpack_from("!II", data, ip + 12)
    k.dscp = data[ip + 1] >> 2
    if p.key_port >= 0:
        k.dst_port = _port(data, p.key_port)
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
