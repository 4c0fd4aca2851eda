"""Network namespaces ``<prefix>edge``, ``<prefix>core`` and ``<prefix>alt`` on one bridge.

::

      <prefix>edge                        <prefix>core
     br0 10.77.0.1 ── p-core ═══ veth ═══ eth0 10.77.0.2   (data planes attach here)
          └────────── p-alt  ═══ veth ═══ eth0 10.77.0.3
                                          <prefix>alt

Data planes that run as processes (the bundled P4 target, the NetFPGA model) get links
of their own (``host_link``): ``<prefix>p4i`` / ``<prefix>nfi`` in the host namespace,
peered with ``p4-in`` / ``nf-in`` in ``edge`` (where traffic enters), and ``<prefix>p4o`` /
``<prefix>nfo`` peered with ``p4-out`` / ``nf-out`` in ``<prefix>sink`` (where the data
plane's egress is measured). Deleting the namespaces removes them with their peers.

The bridge in ``edge`` plays the switch of seed 001 Fig. 3: a frame the core sends back
out of its port (XDP_TX) with the alt node's MAC reaches ``alt``. (On veth, frames sent
back with XDP_TX only arrive when the peer end — ``p-core`` — runs an XDP program too; a
data plane that needs that attaches one itself: the testbed stays generic.)

``Testbed(prefix)`` is a context manager; entering removes any leftovers of an earlier
run with the same prefix (a crashed test), leaving tears everything down. Needs root.
"""

from __future__ import annotations

import ipaddress
import json
import socket
import subprocess
from collections.abc import Iterable
from dataclasses import dataclass
from types import TracebackType

from sliceportal.traffic.netns import entered

ROLES = ("edge", "core", "alt")
SINK = "sink"  # where the egress links of data planes that run as processes end
HOST_LINKS = ("p4i", "p4o", "nfi", "nfo")  # their host-side interface names, after the prefix


class TestbedError(RuntimeError):
    """A namespace / link operation failed; the message holds the command and its error."""

    __test__ = False


@dataclass(frozen=True, slots=True)
class Node:
    role: str
    netns: str
    ifname: str  # the interface traffic enters / leaves through
    mac: str
    ip: str
    prefix_len: int


@dataclass(frozen=True, slots=True)
class LinkStats:
    rx_packets: int
    rx_bytes: int
    rx_dropped: int
    tx_packets: int
    tx_bytes: int
    tx_dropped: int


def _run(argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
    p = subprocess.run(argv, capture_output=True, text=True)
    if check and p.returncode != 0:
        raise TestbedError(f"{' '.join(argv)}: {p.stderr.strip() or p.stdout.strip()}")
    return p


def namespaces(prefix: str) -> list[str]:
    return [f"{prefix}{r}" for r in (*ROLES, SINK)]


def cleanup(prefix: str) -> list[str]:
    """Remove every namespace this prefix's testbed creates; returns those removed."""
    existing = set(_run(["ip", "netns", "list"]).stdout.split())
    removed = []
    for ns in namespaces(prefix):
        if ns in existing:
            _run(["ip", "netns", "del", ns])
            removed.append(ns)
    # a host-side veth end goes with its peer's namespace; one whose peer never got there did not
    for tag in HOST_LINKS:
        if _run(["ip", "link", "show", "dev", f"{prefix}{tag}"], check=False).returncode == 0:
            _run(["ip", "link", "del", f"{prefix}{tag}"], check=False)
            removed.append(f"{prefix}{tag}")
    return removed


class Testbed:
    __test__ = False  # not a pytest test class despite the name

    def __init__(self, prefix: str = "sp-", subnet: str = "10.77.0.0/24") -> None:
        if not prefix or len(prefix) > 20 or not all(c.isalnum() or c in "-_" for c in prefix):
            raise ValueError(f"bad namespace prefix {prefix!r}")
        net = ipaddress.IPv4Network(subnet)
        if net.num_addresses < 8:
            raise ValueError(f"subnet {subnet} too small")
        self.prefix = prefix
        hosts = list(net.hosts())[:3]
        self.nodes: dict[str, Node] = {
            role: Node(
                role=role,
                netns=f"{prefix}{role}",
                ifname="br0" if role == "edge" else "eth0",
                mac=f"02:53:50:00:00:{i + 1:02x}",
                ip=str(hosts[i]),
                prefix_len=net.prefixlen,
            )
            for i, role in enumerate(ROLES)
        }
        self._up = False

    def peer_port(self, role: str) -> str:
        """The bridge port in ``edge`` facing ``role``'s interface."""
        return f"p-{role}"

    def __getitem__(self, role: str) -> Node:
        return self.nodes[role]

    def __enter__(self) -> Testbed:
        cleanup(self.prefix)
        try:
            self.up()
        except BaseException:
            self.down()
            raise
        return self

    def __exit__(self, t: type[BaseException] | None, e: BaseException | None, tb: TracebackType | None) -> None:
        self.down()

    def up(self) -> None:
        edge, core, alt = (self.nodes[r] for r in ROLES)
        for n in self.nodes.values():
            _run(["ip", "netns", "add", n.netns])
            _run(["ip", "-n", n.netns, "link", "set", "lo", "up"])
            # no IPv6 autoconfiguration chatter on the measured links
            _run(["ip", "netns", "exec", n.netns, "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"], check=False)
        e = edge.netns
        _run(
            [
                "ip",
                "-n",
                e,
                "link",
                "add",
                "br0",
                "address",
                edge.mac,
                "type",
                "bridge",
                "stp_state",
                "0",
                "forward_delay",
                "0",
            ]
        )
        for port, peer in (("p-core", core), ("p-alt", alt)):
            _run(["ip", "link", "add", port, "netns", e, "type", "veth", "peer", "eth0", "netns", peer.netns])
            _run(["ip", "-n", peer.netns, "link", "set", "eth0", "address", peer.mac])
            _run(["ip", "-n", e, "link", "set", port, "master", "br0"])
            for ns, dev in ((e, port), (peer.netns, "eth0")):
                _run(["ip", "-n", ns, "link", "set", dev, "up"])
            _run(["ip", "-n", peer.netns, "addr", "add", f"{peer.ip}/{peer.prefix_len}", "dev", "eth0"])
        _run(["ip", "netns", "add", f"{self.prefix}{SINK}"])
        _run(["ip", "-n", f"{self.prefix}{SINK}", "link", "set", "lo", "up"])
        _run(
            ["ip", "netns", "exec", f"{self.prefix}{SINK}", "sysctl", "-qw", "net.ipv6.conf.default.disable_ipv6=1"],
            check=False,
        )
        _run(["ip", "-n", e, "addr", "add", f"{edge.ip}/{edge.prefix_len}", "dev", "br0"])
        _run(["ip", "-n", e, "link", "set", "br0", "up"])
        # static neighbours: no ARP races in the first packets of a test
        for a in self.nodes.values():
            for b in self.nodes.values():
                if a is not b:
                    _run(
                        [
                            "ip",
                            "-n",
                            a.netns,
                            "neigh",
                            "replace",
                            b.ip,
                            "lladdr",
                            b.mac,
                            "dev",
                            a.ifname,
                            "nud",
                            "permanent",
                        ]
                    )
        self._up = True

    def host_link(self, tag: str, netns: str, inner: str) -> str:
        """A veth pair from the host namespace (``<prefix><tag>``, where a data-plane process
        opens it) to ``inner`` in ``netns`` (a testbed namespace: it goes with it)."""
        if tag not in HOST_LINKS:
            raise ValueError(f"unknown host link {tag!r}")
        outer = f"{self.prefix}{tag}"
        if len(outer) > 15:
            raise ValueError(f"interface name {outer!r} longer than 15 characters: use a shorter prefix")
        _run(["ip", "link", "add", outer, "type", "veth", "peer", inner, "netns", netns])
        _run(["sysctl", "-qw", f"net.ipv6.conf.{outer}.disable_ipv6=1"], check=False)
        _run(["ip", "link", "set", outer, "up"])
        _run(["ip", "-n", netns, "link", "set", inner, "up"])
        return outer

    def down(self) -> None:
        cleanup(self.prefix)
        self._up = False

    def exec(self, role: str, argv: list[str], check: bool = True) -> subprocess.CompletedProcess[str]:
        return _run(["ip", "netns", "exec", self.nodes[role].netns, *argv], check=check)

    def link_stats(self, role: str, ifname: str | None = None) -> LinkStats:
        n = self.nodes[role]
        out = _run(["ip", "-n", n.netns, "-s", "-j", "link", "show", "dev", ifname or n.ifname]).stdout
        s = json.loads(out)[0]["stats64"]
        rx, tx = s["rx"], s["tx"]
        return LinkStats(rx["packets"], rx["bytes"], rx["dropped"], tx["packets"], tx["bytes"], tx["dropped"])

    def send(self, role: str, frames: Iterable[bytes], ifname: str | None = None) -> int:
        """Send raw Ethernet frames out of a node's interface; returns how many."""
        n = self.nodes[role]
        with entered(n.netns):
            s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
        sent = 0
        with s:
            s.bind((ifname or n.ifname, 0))
            for f in frames:
                s.send(f)
                sent += 1
        return sent
