"""The bundled target on live ports (``-i PORT@IFNAME`` over AF_PACKET, as BMv2 takes them):
tenant VLAN push on the way to the trunk, pop on the way back, unknown VIDs dropped —
the seed 002 behaviour on real veth links rather than pcaps."""

from __future__ import annotations

import os
import socket
import time
from collections.abc import Callable, Iterator

import pytest
from bmv2_target.packet_io import open_port, receive

from sliceportal.traffic.packets import Encap, Flow
from sliceportal_p4rt.driver import Driver
from sliceportal_testbed.processes import RunningTarget

from .irs import two_tenants
from .traffic import frame, veth_ports

pytestmark = pytest.mark.needs_root
PORTS = (1, 2, 3)


@pytest.fixture
def veths() -> Iterator[dict[int, tuple[str, str]]]:
    """port -> (the target's end, the test's end)."""
    with veth_ports(f"lp{os.getpid() % 10000}-", PORTS) as ends:
        yield ends


def _receive(sock: socket.socket, settle_s: float = 1.0) -> list[bytes]:
    got, deadline = [], time.monotonic() + settle_s
    while time.monotonic() < deadline:
        try:
            data = receive(sock)  # with its VLAN tag, which the kernel strips into metadata
        except BlockingIOError:
            time.sleep(0.01)
            continue
        if data is not None:
            got.append(data)
    return got


def test_vlan_push_pop_and_unknown_vid_on_live_ports(
    veths: dict[int, tuple[str, str]], start_target: Callable[..., RunningTarget]
) -> None:
    args = [a for p, (s, _) in veths.items() for a in ("-i", f"{p}@{s}")]
    target = start_target("--priority-queues", "8", *args)
    d = Driver({"address": target.address, "access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3})
    d.apply(d.lower(two_tenants()), lambda e: None)
    socks = {}
    for p, (_, t) in veths.items():
        socks[p] = open_port(t)
        socks[p].setblocking(False)
    try:
        untagged = frame(Flow("10.1.0.1", "10.2.0.1", 5000, vni=1001, encap=Encap.VXLAN), 200)[0]
        socks[1].send(untagged)  # tenant A's access port -> the trunk, tagged with A's VID
        assert _receive(socks[3]) == [untagged[:12] + b"\x81\x00\x00\x64" + untagged[12:]]
        tagged_b = frame(Flow("10.1.0.1", "10.2.0.1", 5000, vni=1001, vlan=200, encap=Encap.VXLAN), 200)[0]
        socks[3].send(tagged_b)  # VID 200 on the trunk -> only tenant B's port, untagged
        assert _receive(socks[2]) == [tagged_b[:12] + tagged_b[16:]]
        assert _receive(socks[1], 0.3) == []
        unknown = frame(Flow("10.1.0.1", "10.2.0.1", 5000, vni=1001, vlan=300, encap=Encap.VXLAN), 200)[0]
        socks[3].send(unknown)  # a VID no tenant has: dropped
        assert _receive(socks[1], 0.5) == [] and _receive(socks[2], 0.1) == []
    finally:
        for s in socks.values():
            s.close()
        d.close()
