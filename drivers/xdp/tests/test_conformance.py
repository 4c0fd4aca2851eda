"""The core's conformance suite run against the XDP driver on the real kernel."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import pytest

from sliceportal.drivers.conformance import DriverConformance
from sliceportal.traffic.packets import Flow, build_bytes
from sliceportal_xdp.driver import Driver


@pytest.mark.needs_root
class TestXdpConformance(DriverConformance):
    @pytest.fixture
    def driver(self) -> Iterator[Driver]:  # type: ignore[override]
        d = Driver({"overload_poll_s": 0, "capacity": {"src_ip": 2048}})
        yield d
        d.close()

    @pytest.fixture
    def restart(self, driver: Driver) -> Callable[[], None]:  # type: ignore[override]
        # unload the program: the next call loads a fresh, empty one
        return driver.close

    @pytest.fixture
    def inject_apply_failure(self, driver: Driver) -> Callable[[], None]:  # type: ignore[override]
        return lambda: driver.inject_write_failure(after_entries=1)

    @pytest.fixture
    def traffic(self, driver: Driver) -> Callable[[], None]:  # type: ignore[override]
        pkts = [build_bytes(Flow(f"10.45.0.{i}", "10.60.0.1", 5000 + 2 * i, teid=i, vni=7)) for i in range(16)]

        def send() -> None:
            for p in pkts:
                driver.run(p)

        return send
