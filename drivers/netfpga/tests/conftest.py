"""Fixtures: the Verilator model of dataplane/netfpga running as a process per test."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

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
