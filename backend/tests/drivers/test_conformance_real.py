"""The conformance suite against the real drivers that can run here without root.

p4rt runs against the bundled P4Runtime target (a real gRPC subprocess from
dataplane/bmv2). The XDP driver needs root and namespaces and the NetFPGA driver the RTL
simulator; their own test folders are the place to subclass ``DriverConformance`` (see
docs/drivers.md). Skipped, with the reason, when a driver package does not load yet.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from sliceportal.drivers.conformance import DriverConformance
from sliceportal.drivers.contract import Driver

BMV2 = Path(__file__).resolve().parents[3] / "dataplane" / "bmv2"


def _bmv2_target() -> Any:
    if str(BMV2) not in sys.path:
        sys.path.insert(0, str(BMV2))
    try:
        from bmv2_target.testing import Target
    except ImportError as e:
        pytest.skip(f"the bundled P4Runtime target does not import: {e}")
    return Target


# With one update per Write RPC, the first push of the 1-slice plan takes about 13 writes
# and the 4-slice plan that follows about 12 more: write 20 fails in the middle of it.
FAILING_WRITE = 20


class _Running:
    """The target process, replaceable so ``restart`` can bring it back empty on its port."""

    def __init__(self, target_cls: Any, *extra: str) -> None:
        self.cls = target_cls
        self.proc = target_cls("--priority-queues", "8", *extra)
        self.address: str = self.proc.address

    def restart(self) -> None:
        port = self.address.rsplit(":", 1)[1]
        self.proc.stop()
        self.proc = self.cls("--priority-queues", "8", "--grpc-port", port)

    def stop(self) -> None:
        self.proc.stop()


class TestP4rtConformance(DriverConformance):
    @pytest.fixture
    def failing(self, request: pytest.FixtureRequest) -> bool:
        # The target's fault injector is armed at start (--fail-write), so the rollback
        # test gets its own target whose FAILING_WRITE-th Write RPC fails.
        return "mid_push_failure" in request.node.name

    @pytest.fixture
    def running(self, failing: bool) -> Iterator[_Running]:
        r = _Running(_bmv2_target(), *(("--fail-write", str(FAILING_WRITE)) if failing else ()))
        yield r
        r.stop()

    @pytest.fixture
    def driver(self, running: _Running, failing: bool) -> Iterator[Driver]:
        p4rt = pytest.importorskip("sliceportal_p4rt.driver")
        d = p4rt.Driver({"address": running.address, "timeout_s": 5, **({"batch_size": 1} if failing else {})})
        yield d
        d.close()

    @pytest.fixture
    def inject_apply_failure(self, failing: bool) -> Callable[[], None]:
        assert failing
        return lambda: None  # already armed in the target

    @pytest.fixture
    def restart(self, running: _Running) -> Callable[[], None]:
        return running.restart


@pytest.mark.needs_root
class TestXdpConformance(DriverConformance):
    """The XDP data plane loaded into the kernel (not attached: no traffic needed)."""

    @pytest.fixture
    def driver(self) -> Iterator[Driver]:
        xdp = pytest.importorskip("sliceportal_xdp.driver")
        d = xdp.Driver({"lanes": 4, "paths": 8, "lane_cpus": {0: 0, 1: 0, 2: 0, 3: 0}, "overload_poll_s": 0})
        yield d
        d.close()

    @pytest.fixture
    def restart(self, driver: Driver) -> Callable[[], None]:
        # close() unloads the BPF object; the next call loads a fresh one with empty maps,
        # which is what a restarted XDP data plane is.
        return driver.close

    @pytest.fixture
    def inject_apply_failure(self, driver: Driver) -> Callable[[], None]:
        # the driver's own fault hook: the kernel refuses a map update part-way through
        return lambda: driver.inject_write_failure(after_entries=1)  # type: ignore[attr-defined]
