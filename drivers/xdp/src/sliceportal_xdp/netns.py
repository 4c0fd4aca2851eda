"""Run a block of code inside a named network namespace (``ip netns`` names).

``setns`` switches only the calling thread, and sockets / netlink handles opened inside
keep their namespace afterwards, which is all attach and interface queries need.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import socket
import struct
from collections.abc import Iterator
from contextlib import contextmanager

CLONE_NEWNET = 0x40000000
_libc = ctypes.CDLL(None, use_errno=True)


def _setns(fd: int) -> None:
    if _libc.setns(fd, CLONE_NEWNET) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"setns: {os.strerror(err)}")


@contextmanager
def netns(name: str | None) -> Iterator[None]:
    if name is None:
        yield
        return
    own = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
    try:
        target = os.open(f"/run/netns/{name}", os.O_RDONLY)
    except FileNotFoundError:
        os.close(own)
        raise
    try:
        _setns(target)
        try:
            yield
        finally:
            _setns(own)
    finally:
        os.close(target)
        os.close(own)


SIOCGIFHWADDR = 0x8927


# /sys/class/net shows the namespace sysfs was mounted in, so ask a socket instead
def if_index(name: str, ns: str | None) -> int:
    with netns(ns):
        return socket.if_nametoindex(name)


def if_mac(name: str, ns: str | None) -> str:
    with netns(ns):
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
    with s:
        ifr = fcntl.ioctl(s.fileno(), SIOCGIFHWADDR, struct.pack("16s16x", name.encode()))
    return ":".join(f"{b:02x}" for b in ifr[18:24])
