"""Frames on live ports over AF_PACKET, with their 802.1Q tags.

Linux strips a received VLAN tag into packet metadata (VLAN offload, on by default on
veth), so a plain recv() on a trunk port would hand the pipeline an untagged frame. The
tag comes back through PACKET_AUXDATA and is put back where it was.
"""

from __future__ import annotations

import socket
import struct

SOL_PACKET = 263
PACKET_AUXDATA = 8
TP_STATUS_VLAN_VALID = 0x10
TP_STATUS_VLAN_TPID_VALID = 0x40
_AUX = struct.Struct("IIIHHHH")  # struct tpacket_auxdata


def open_port(ifname: str) -> socket.socket:
    s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(0x0003))
    s.setsockopt(SOL_PACKET, PACKET_AUXDATA, 1)
    s.bind((ifname, 0))
    return s


def receive(s: socket.socket) -> bytes | None:
    """The next frame as it was on the wire; None for frames this host sent out."""
    data, ancillary, _flags, addr = s.recvmsg(65535, socket.CMSG_SPACE(_AUX.size))
    if addr[2] == socket.PACKET_OUTGOING:
        return None
    for level, kind, payload in ancillary:
        if level == SOL_PACKET and kind == PACKET_AUXDATA and len(payload) >= _AUX.size:
            status, _len, _snap, _mac, _net, tci, tpid = _AUX.unpack_from(payload)
            if status & TP_STATUS_VLAN_VALID:
                tpid = tpid if status & TP_STATUS_VLAN_TPID_VALID else 0x8100
                data = data[:12] + struct.pack("!HH", tpid, tci) + data[12:]
    return data
