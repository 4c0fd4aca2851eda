"""The conformance suite run against the in-memory driver (proves the suite itself)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sliceportal.drivers.conformance import DriverConformance, overflowing_ir
from sliceportal.drivers.contract import Driver
from sliceportal.rules.scenarios import table3_flows


class TestMemoryConformance(DriverConformance):
    @pytest.fixture
    def driver(self, memory_driver: Driver) -> Driver:
        return memory_driver

    @pytest.fixture
    def restart(self, plane: object) -> Callable[[], None]:
        return plane.restart  # type: ignore[attr-defined, no-any-return]

    @pytest.fixture
    def inject_apply_failure(self, plane: object) -> Callable[[], None]:
        def arm() -> None:
            plane.fail_at_write = 3  # type: ignore[attr-defined]

        return arm

    @pytest.fixture
    def traffic(self, plane: object) -> Callable[[], None]:
        def send() -> None:
            for f in table3_flows(1)[:50]:
                plane.send(f.key())  # type: ignore[attr-defined]

        return send


class TestBrokenDriversFailTheSuite:
    """The suite must be able to fail: run its checks against deliberately broken drivers."""

    def test_a_driver_that_writes_in_lower_is_caught(self, make_driver: Callable[..., Driver]) -> None:
        d = make_driver()
        suite = DriverConformance()
        real_lower = d.lower

        def dirty_lower(ir):  # type: ignore[no-untyped-def]
            plan = real_lower(ir)
            d.plane.version = "dirty"  # type: ignore[attr-defined]
            return plan

        d.lower = dirty_lower  # type: ignore[method-assign]
        factory = DriverConformance.ir_factory.__wrapped__(suite, d)  # type: ignore[attr-defined]
        with pytest.raises(AssertionError, match="must not touch"):
            suite.test_lower_is_pure_and_deterministic(d, factory)

    def test_a_driver_without_rollback_is_caught(self, make_driver: Callable[..., Driver], plane: object) -> None:
        d = make_driver()
        plane.fail_rollback = True  # type: ignore[attr-defined]
        suite = DriverConformance()
        factory = DriverConformance.ir_factory.__wrapped__(suite, d)  # type: ignore[attr-defined]

        def arm() -> None:
            plane.fail_at_write = 3  # type: ignore[attr-defined]

        with pytest.raises(AssertionError):
            suite.test_mid_push_failure_rolls_back(d, factory, arm)

    def test_a_driver_that_accepts_too_much_is_caught(self, make_driver: Callable[..., Driver]) -> None:
        # A driver that silently takes more entries than the refusal test asks for: the
        # capacity test must fail rather than pass vacuously.
        d = make_driver(capacity=1000)
        suite = DriverConformance()
        with pytest.raises(pytest.fail.Exception, match="DID NOT RAISE"):
            suite.test_capacity_refused_before_write_with_the_numbers(d, overflowing_ir(d.capabilities(), 11))
