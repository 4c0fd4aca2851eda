"""The UDP socket options STAMP needs on Linux (IPv4): kernel receive timestamps, the received
TTL and TOS, and the TTL / TOS a packet is sent with. Python's ``socket`` module lacks some."""

from __future__ import annotations

import socket
import struct
import time
from dataclasses import dataclass

SO_TIMESTAMPNS = 35  # also the SCM type of its ancillary message (struct timespec)
IP_RECVTTL = 12
IP_RECVTOS = 13
_TIMESPEC = struct.Struct("@qq")
_INT = struct.Struct("@i")
ANCILLARY_SPACE = socket.CMSG_SPACE(_TIMESPEC.size) + 2 * socket.CMSG_SPACE(_INT.size)
SEND_TTL = 255  # RFC 5357 §4.1.2 / RFC 8762: test packets leave with TTL 255
MAX_DATAGRAM = 9216


@dataclass(frozen=True)
class Received:
    data: bytes
    peer: tuple[str, int]
    rx_ns: int  # kernel receive time (CLOCK_REALTIME), Unix ns
    ttl: int  # 0: the kernel did not say
    tos: int


def udp_socket(bind: str, port: int, *, tos: int = 0) -> socket.socket:
    """A bound IPv4 UDP socket that reports receive time, TTL and TOS, sending with TTL 255."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    try:
        sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
        sock.setsockopt(socket.IPPROTO_IP, IP_RECVTTL, 1)
        sock.setsockopt(socket.IPPROTO_IP, IP_RECVTOS, 1)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TTL, SEND_TTL)
        sock.setsockopt(socket.IPPROTO_IP, socket.IP_TOS, tos)
        sock.bind((bind, port))
    except BaseException:
        sock.close()
        raise
    return sock


def receive(sock: socket.socket) -> Received:
    """One datagram with what the kernel said about it (``BlockingIOError`` when none waits)."""
    data, ancillary, _flags, peer = sock.recvmsg(MAX_DATAGRAM, ANCILLARY_SPACE)
    rx_ns, ttl, tos = 0, 0, 0
    for level, kind, value in ancillary:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(value) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(value)
            rx_ns = sec * 1_000_000_000 + nsec
        elif level == socket.IPPROTO_IP and kind == socket.IP_TTL and len(value) >= _INT.size:
            ttl = _INT.unpack_from(value)[0]
        elif level == socket.IPPROTO_IP and kind == socket.IP_TOS and len(value) >= 1:
            tos = value[0]
    return Received(data, (str(peer[0]), int(peer[1])), rx_ns or time.time_ns(), ttl, tos)


def send_with_tos(sock: socket.socket, data: bytes, peer: tuple[str, int], tos: int) -> None:
    """Send one datagram with this TOS byte (an ancillary IP_TOS: the socket's own stays)."""
    sock.sendmsg([data], [(socket.IPPROTO_IP, socket.IP_TOS, _INT.pack(tos))], 0, peer)
