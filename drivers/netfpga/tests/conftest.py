"""Fixtures: the Verilator model of dataplane/netfpga running as a process per test, or as a
live card between veths."""

from __future__ import annotations

import itertools
import os
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from scapy.utils import wrpcap

from sliceportal.drivers.contract import NativePlan, PushError
from sliceportal.rules.ir import RuleIR
from sliceportal.traffic.packets import Flow, build
from sliceportal_netfpga import simulator
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.simulator import SimProcess
from sliceportal_testbed.veths import veth_pairs

NETFPGA = Path(__file__).resolve().parents[3] / "dataplane" / "netfpga"
_VETHS = itertools.count()


@pytest.fixture(scope="session")
def sim_binary() -> Path:
    # Idempotent: a no-op when bootstrap already built it.
    subprocess.run(["make", "-C", str(NETFPGA), "sim"], check=True, capture_output=True)
    return simulator.DEFAULT_BINARY


@pytest.fixture
def sim(sim_binary: Path, tmp_path: Path) -> Iterator[SimProcess]:
    s = simulator.start(tmp_path / "sp_sim.sock", binary=sim_binary)
    yield s
    s.stop()


@pytest.fixture
def conformance_pcap(tmp_path: Path) -> Path:
    """The conformance suite's traffic as a pcap the simulator injects: 16 GTP-in-VXLAN flows
    (one per UE, ports 5000 + 2i) -- the same frames through the local and the agent card."""
    pcap = tmp_path / "t.pcap"
    wrpcap(str(pcap), [build(Flow(f"10.45.0.{i}", "10.60.0.1", 5000 + 2 * i, vni=7, teid=i)) for i in range(16)])
    return pcap


@pytest.fixture
def veths() -> Iterator[tuple[str, str]]:
    """Two veth pairs, up, IPv6 off (no frames of the kernel's own): the outer ends (where
    traffic is sent, where it is received); the card takes the inner ends (``live_card``)."""
    # Unique per test too: scapy caches interfaces by name, and a pair deleted and created
    # again under the same name in one process has a new index ("No such device").
    tag = f"{os.getpid() % 10000}{next(_VETHS) % 100}"
    pairs = [(f"nfi{tag}a", f"nfi{tag}b"), (f"nfo{tag}a", f"nfo{tag}b")]
    with veth_pairs(*pairs):
        yield pairs[0][0], pairs[1][0]


@contextmanager
def live_card(sim_binary: Path, tmp_path: Path, veths: tuple[str, str], *args: str) -> Iterator[Driver]:
    """The model as a live card on the inner ends of ``veths`` (``args``: more of sp_sim's),
    and a driver pushing to it; both stop on exit."""
    wire, host = veths
    sim = simulator.start(
        tmp_path / "s.sock", "--veth-in", wire[:-1] + "b", "--veth-out", host[:-1] + "b", *args, binary=sim_binary
    )
    driver = Driver({"address": sim.address})
    try:
        yield driver
    finally:
        driver.close()
        sim.stop()


def push_cut_after(d: Driver, sim: SimProcess, old: RuleIR, new: RuleIR, fail_after: int) -> NativePlan:
    """``old`` pushed, then the push of ``new`` loses its connection after ``fail_after``
    writes: it fails rolled back, and the card holds ``old`` (version and tables); the next
    push of ``new`` goes through. The plan of ``new``."""
    before = d.lower(old)
    d.apply(before, lambda _: None)
    after = d.lower(new)
    sim.command(f"FAULT {fail_after}")
    with pytest.raises(PushError) as e:
        d.apply(after, lambda _: None)
    assert e.value.rolled_back
    state = d.read_state()
    assert (state.version, state.tables) == (before.version, before.tables)
    d.apply(after, lambda _: None)
    return after
