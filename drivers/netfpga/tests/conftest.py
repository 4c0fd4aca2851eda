"""Fixtures: the Verilator model of dataplane/netfpga running as a process per test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.utils import wrpcap

from sliceportal.traffic.packets import Flow, build
from sliceportal_netfpga import simulator
from sliceportal_netfpga.simulator import SimProcess

NETFPGA = Path(__file__).resolve().parents[3] / "dataplane" / "netfpga"


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
