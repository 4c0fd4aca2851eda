"""The core's conformance suite run against the netfpga driver on the Verilator model."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from sliceportal.drivers.conformance import DriverConformance
from sliceportal_netfpga import simulator
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.simulator import SimProcess


class TestNetfpgaConformance(DriverConformance):
    @pytest.fixture
    def card(self, sim_binary: Path, tmp_path: Path) -> Iterator[list[SimProcess]]:
        # A list so `restart` can swap the process behind the same socket path.
        procs = [simulator.start(tmp_path / "card.sock", binary=sim_binary)]
        yield procs
        procs[-1].stop()

    @pytest.fixture
    def driver(self, card: list[SimProcess]) -> Iterator[Driver]:  # type: ignore[override]
        d = Driver({"address": card[0].address})
        yield d
        d.close()

    @pytest.fixture
    def restart(self, card: list[SimProcess], sim_binary: Path) -> Callable[[], None]:  # type: ignore[override]
        def again() -> None:
            card[-1].stop()
            card.append(simulator.start(Path(card[0].address), binary=sim_binary))

        return again

    @pytest.fixture
    def inject_apply_failure(self, card: list[SimProcess]) -> Callable[[], None]:  # type: ignore[override]
        return lambda: card[-1].command("FAULT 10")

    @pytest.fixture
    def traffic(self, card: list[SimProcess], conformance_pcap: Path) -> Callable[[], None]:  # type: ignore[override]
        def send() -> None:
            card[-1].command(f"INJECT {conformance_pcap}")
            card[-1].command("RUN")

        return send
