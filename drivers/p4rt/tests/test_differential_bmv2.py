"""Differential test against the real BMv2: the bundled target and ``simple_switch_grpc``
running p4c's compilation of slicing.p4 get the same entries from the same driver and the
same packets, and must emit the same frames on the same ports and count the same.

Runs whenever ``p4c`` and ``simple_switch_grpc`` are on PATH (the review machine, the
docker-compose BMv2 image); skipped with the reason everywhere else. Packets are spaced
1 ms apart so that queueing (which the two model differently in time) plays no part: the
comparison is of parsing, tenant mapping, classification, VLAN push / pop, marking and
counters.
"""

from __future__ import annotations

import os
import random
import shutil
import socket
import subprocess
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from bmv2_target.packet_io import open_port, receive

from sliceportal.testbed.processes import free_port
from sliceportal.traffic.packets import Encap, Flow
from sliceportal_p4rt.driver import Driver

from .irs import two_tenants
from .traffic import frame, read_pcap, run_pcaps, write_pcap

P4C, BMV2 = shutil.which("p4c"), shutil.which("simple_switch_grpc")
BMV2_DIR = Path(__file__).resolve().parents[3] / "dataplane" / "bmv2"
PORTS = (1, 2, 3)
OPTIONS = {"access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3}

pytestmark = [pytest.mark.needs_root, pytest.mark.needs_bmv2]


@pytest.fixture
def bmv2() -> Iterator[tuple[str, dict[int, str]]]:
    """simple_switch_grpc with one veth pair per port: the switch owns ``sd<pid>-<p>s``, the
    test sends and captures on ``sd<pid>-<p>t``."""
    tag = f"sd{os.getpid() % 10000}"
    ends = {p: (f"{tag}-{p}s", f"{tag}-{p}t") for p in PORTS}
    for s, t in ends.values():
        subprocess.run(["ip", "link", "add", s, "type", "veth", "peer", "name", t], check=True)
        for dev in (s, t):
            subprocess.run(["ip", "link", "set", dev, "up"], check=True)
            subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"], check=False)
    grpc_port = free_port()
    args = [BMV2, "--no-p4", "--device-id", "1", "--log-level", "warn"]
    for p, (s, _) in ends.items():
        args += ["-i", f"{p}@{s}"]
    proc = subprocess.Popen([*args, "--", "--grpc-server-addr", f"127.0.0.1:{grpc_port}", "--priority-queues", "8"])
    time.sleep(2)
    try:
        yield f"127.0.0.1:{grpc_port}", {p: t for p, (_, t) in ends.items()}
    finally:
        proc.terminate()
        proc.wait(timeout=10)
        for s, _ in ends.values():
            subprocess.run(["ip", "link", "del", s], check=False)


def _packets() -> dict[int, list[tuple[int, bytes]]]:
    """Input port -> (time ns, frame): both tenants' flows, an unknown VID, untagged on the trunk."""
    rng = random.Random(11)
    out: dict[int, list[tuple[int, bytes]]] = {p: [] for p in PORTS}
    t = 10**9
    for i in range(120):
        port = rng.choice(PORTS)
        vid = {1: None, 2: None, 3: rng.choice((100, 200, 300, None))}[port]
        vni = rng.choice((1001, 1002))
        flow = Flow(f"10.{rng.randrange(1, 3)}.0.{rng.randrange(1, 40)}", "10.9.0.1", rng.randrange(5000, 5040),
                    dscp=rng.randrange(64), vni=vni, teid=rng.randrange(1, 1000), vlan=vid,
                    encap=rng.choice(list(Encap)))
        out[port].append((t, frame(flow, rng.choice((128, 256, 700)), ect=bool(i % 2))[0]))
        t += 1_000_000
    return out


def _capture(ifaces: dict[int, str]) -> dict[int, socket.socket]:
    socks = {}
    for p, dev in ifaces.items():
        socks[p] = open_port(dev)  # frames with their VLAN tags (the kernel strips them into metadata)
        socks[p].setblocking(False)
    return socks


def test_bundled_target_equals_bmv2(bmv2: tuple[str, dict[int, str]],
                                    start_target, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    ir = two_tenants()
    packets = _packets()

    # real BMv2: entries through the driver with p4c's P4Info, frames over the veths
    address, ifaces = bmv2
    real = Driver({"address": address, **OPTIONS})
    real.apply(real.lower(ir), lambda e: None)
    socks = _capture(ifaces)
    senders = {p: socket.socket(socket.AF_PACKET, socket.SOCK_RAW) for p in PORTS}
    for p, s in senders.items():
        s.bind((ifaces[p], 0))
    for _, port, data in sorted((t, p, d) for p, pkts in packets.items() for t, d in pkts):
        senders[port].send(data)
        time.sleep(0.001)
    time.sleep(1.0)
    got_real: dict[int, Counter[bytes]] = {p: Counter() for p in PORTS}
    for p, s in socks.items():
        while True:
            try:
                data = receive(s)
            except BlockingIOError:
                break
            if data is not None:  # None: what we sent ourselves on that end
                got_real[p][data] += 1
        s.close()
    for s in senders.values():
        s.close()
    real_counters = real.counters()
    real.close()

    # bundled target: the same entries (its own copy of the P4Info), the same frames from pcaps
    target = start_target("--priority-queues", "8")
    bundled = Driver({"address": target.address, **OPTIONS})
    bundled.apply(bundled.lower(ir), lambda e: None)
    inputs = {}
    for p, pkts in packets.items():
        write_pcap(tmp_path / f"in{p}.pcap", pkts)
        inputs[p] = tmp_path / f"in{p}.pcap"
    run_pcaps(target.address, inputs, tmp_path / "out")
    got_bundled = {p: Counter(d for _, d in read_pcap(tmp_path / "out" / f"port{p}.pcap")) for p in PORTS}
    bundled_counters = bundled.counters()
    bundled.close()

    assert got_bundled == got_real
    assert {k: v.packets for k, v in bundled_counters.slices.items()} == \
        {k: v.packets for k, v in real_counters.slices.items()}
    assert {k: v.packets for k, v in bundled_counters.rules.items()} == \
        {k: v.packets for k, v in real_counters.rules.items()}
