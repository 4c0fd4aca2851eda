"""Where a driver reaches its data plane or agent: ``tcp:HOST:PORT`` or ``unix:/PATH.sock``.

One check for every driver option that names such an address (the XDP agent's, the NetFPGA
register server's), so that what one accepts the other does not refuse. The portal's own
policy (addresses inside the allowed backend networks, sockets under its run directory) is
applied on top, at the API edge (``schemas/backends.py``).
"""

from __future__ import annotations

import ipaddress
import posixpath
from dataclasses import dataclass
from typing import Literal


@dataclass(frozen=True)
class TcpAddress:
    host: str  # an IP address (IPv6 without brackets) or localhost
    port: int


@dataclass(frozen=True)
class UnixAddress:
    path: str


def parse_address(v: str, unprefixed: Literal["tcp", "unix"]) -> TcpAddress | UnixAddress:
    """What ``v`` names, or ValueError saying what is wrong. An address without ``tcp:`` /
    ``unix:`` is read as ``unprefixed``."""
    kind = "tcp" if v.startswith("tcp:") else "unix" if v.startswith("unix:") else unprefixed
    rest = v.removeprefix(f"{kind}:")
    if kind == "unix":
        if not rest.startswith("/") or posixpath.normpath(rest) != rest or "\x00" in rest:
            raise ValueError("a Unix socket address must be an absolute, normalised path (unix:/run/x.sock)")
        if not rest.endswith(".sock"):
            raise ValueError("a Unix socket address must name a .sock file")
        return UnixAddress(rest)
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        raise ValueError("a TCP address is tcp:HOST:PORT with a port in 1..65535")
    host = host.strip("[]")
    if host != "localhost":
        try:
            ipaddress.ip_address(host)
        except ValueError:
            raise ValueError(f"the host {host!r} must be an IP address or localhost") from None
    return TcpAddress(host, int(port))


def check_address(v: str, unprefixed: Literal["tcp", "unix"]) -> str:
    """``v`` if it is a well-formed address (a pydantic validator's answer), else ValueError."""
    parse_address(v, unprefixed)
    return v
