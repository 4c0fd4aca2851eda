"""The conformance suite every driver's tests reuse (the guarantees of ``contract.py``).

Use it by subclassing in the driver's own tests::

    from sliceportal.drivers.conformance import DriverConformance

    class TestXdpConformance(DriverConformance):
        @pytest.fixture
        def driver(self) -> Iterator[Driver]:
            d = XdpDriver({...})          # a fresh, empty data plane
            yield d
            d.close()

        @pytest.fixture
        def restart(self, driver) -> Callable[[], None]:      # optional
            return lambda: ...            # restart the data plane: it comes back empty

        @pytest.fixture
        def inject_apply_failure(self, driver) -> Callable[[], None]:  # optional
            return lambda: ...            # the next apply fails part-way (after >= 1 write)

Fixtures a driver may override: ``ir_factory`` (default: seed 000 Table 3 with n slices,
compiled for the driver's own geometry and match fields), ``overflow_ir`` (default: one
exact rule more than the driver's largest table holds), ``traffic`` (optional: sends some
packets so counters move). The optional hooks skip their tests, with the reason, when a
driver leaves them ``None``.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import replace

import pytest

from sliceportal.drivers.contract import (
    Capabilities,
    CapacityError,
    Counters,
    Driver,
    GeometryError,
    LaneCounters,
    ProgressEvent,
)
from sliceportal.drivers.push import diff_tables, plan_for, push, reconcile_once, target_spec
from sliceportal.drivers.registry import validate_driver_class
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.ir import FIELD_WIDTHS, Action, Match, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.rules.scenarios import table3_config

IrFactory = Callable[[int], RuleIR]
# Beyond this many entries, building an overflowing IR in a unit test is too slow.
MAX_OVERFLOW_RULES = 300_000
CONFORMANCE_VLAN = 100


def overflowing_ir(caps: Capabilities, n_rules: int) -> RuleIR:
    """``n_rules`` exact, pairwise unmergeable rules (random UE addresses, mixed actions)."""
    rng = random.Random(7)
    addresses = rng.sample(range(1 << 24, 1 << 32), n_rules)
    rules = tuple(
        Rule(
            Match(src_ip=Ternary.exact(a, 32)),
            Action(slice_id=1, lane=rng.randrange(caps.lanes), rr_path=rng.randrange(caps.paths)),
        )
        for a in addresses
    )
    entry = SliceEntry(
        slice_id=1,
        ref=1,
        name="overflow",
        tenant_vni=1,
        tenant_vlan=CONFORMANCE_VLAN,
        lanes=tuple(range(caps.lanes)),
    )
    tenant = TenantEntry(ref=1, name="overflow", vni=1, vlan=CONFORMANCE_VLAN)
    return RuleIR(lanes=caps.lanes, paths=caps.paths, rules=rules, slices=(entry,), tenants=(tenant,))


def _assert_counters_monotonic(old: Counters, new: Counters) -> None:
    def le(a: LaneCounters, b: LaneCounters, where: str) -> None:
        assert a.packets <= b.packets and a.bytes <= b.bytes, where
        assert a.ecn_marks <= b.ecn_marks and a.alt_forwarded <= b.alt_forwarded, where
        for reason, n in a.drops.items():
            assert n <= b.drops.get(reason, 0), f"{where} drops[{reason}]"

    assert new.timestamp >= old.timestamp
    for name in ("rules", "lanes", "slices"):
        before, after = getattr(old, name), getattr(new, name)
        for key, c in before.items():
            assert key in after, f"counter {name}[{key}] disappeared"
            le(c, after[key], f"{name}[{key}]")
    le(old.misses, new.misses, "misses")
    assert old.malformed <= new.malformed


class DriverConformance:
    """Subclass and provide a ``driver`` fixture: a fresh instance on an empty data plane."""

    # ---- fixtures a driver provides / may override --------------------------------

    @pytest.fixture
    def driver(self) -> Driver:
        pytest.fail("a DriverConformance subclass must define the `driver` fixture")

    @pytest.fixture
    def ir_factory(self, driver: Driver) -> IrFactory:
        caps = driver.capabilities()

        def make(n_slices: int) -> RuleIR:
            tenants, slices = table3_config(n_slices)
            # A VLAN too, so data planes that separate tenants by VLAN (seed 002) take the rules.
            tenants = tuple(replace(t, vlan=CONFORMANCE_VLAN) for t in tenants)
            return compile_rules(tenants, slices, target_spec(caps)).ir

        return make

    @pytest.fixture
    def overflow_ir(self, driver: Driver) -> RuleIR:
        caps = driver.capabilities()
        largest = max(caps.capacity.values())
        if largest + 1 > MAX_OVERFLOW_RULES:
            pytest.skip(f"capacity {largest} is too large to exhaust in a unit test")
        return overflowing_ir(caps, largest + 1)

    @pytest.fixture
    def restart(self) -> Callable[[], None] | None:
        return None

    @pytest.fixture
    def inject_apply_failure(self) -> Callable[[], None] | None:
        return None

    @pytest.fixture
    def traffic(self) -> Callable[[], None] | None:
        return None

    # ---- the class itself --------------------------------------------------------

    def test_class_passes_registry_validation(self, driver: Driver) -> None:
        cls = type(driver)
        assert validate_driver_class(cls, cls.name) is cls

    def test_capabilities_are_well_formed(self, driver: Driver) -> None:
        caps = driver.capabilities()
        assert caps.driver == type(driver).name
        for n in (caps.lanes, caps.paths):
            assert n >= 1 and not n & (n - 1), "lanes and paths are powers of two"
        assert caps.match_fields <= FIELD_WIDTHS.keys(), caps.match_fields - FIELD_WIDTHS.keys()
        assert caps.capacity and all(v > 0 for v in caps.capacity.values())

    def test_health_answers(self, driver: Driver) -> None:
        h = driver.health()
        assert h.ok, h.detail

    # ---- lower ------------------------------------------------------------------

    def test_lower_is_pure_and_deterministic(self, driver: Driver, ir_factory: IrFactory) -> None:
        before = driver.read_state()
        ir = ir_factory(2)
        first, second = driver.lower(ir), driver.lower(ir)
        assert first == second
        assert driver.read_state() == before, "lower must not touch the data plane"

    def test_plan_realises_the_ir_version_and_reports_usage(self, driver: Driver, ir_factory: IrFactory) -> None:
        ir = ir_factory(2)
        plan = driver.lower(ir)
        assert plan.driver == type(driver).name
        assert plan.version == ir.digest()
        caps = driver.capabilities()
        for table in caps.capacity:
            # The framework's capacity check reads usage; a table it cannot see is unchecked.
            assert table in plan.usage, f"capacity of {table!r} is declared but the plan reports no usage"
            assert plan.usage[table].capacity == caps.capacity[table], table
        for table, usage in plan.usage.items():
            assert 0 <= usage.used <= usage.capacity, (table, usage)

    def test_geometry_mismatch_refused_before_write(self, driver: Driver) -> None:
        caps = driver.capabilities()
        other = RuleIR(lanes=caps.lanes, paths=caps.paths * 2, rules=())
        before = driver.read_state()
        with pytest.raises(GeometryError):
            driver.lower(other)
        with pytest.raises(GeometryError):
            plan_for(driver, other)
        assert driver.read_state() == before

    def test_capacity_refused_before_write_with_the_numbers(self, driver: Driver, overflow_ir: RuleIR) -> None:
        before = driver.read_state()
        with pytest.raises(CapacityError) as e:
            plan_for(driver, overflow_ir)
        assert e.value.needed > e.value.available > 0
        assert str(e.value.needed) in str(e.value) and str(e.value.available) in str(e.value)
        assert driver.read_state() == before, "a refused plan must leave the data plane untouched"

    # ---- apply / read_state -----------------------------------------------------

    def test_apply_then_read_state_equals_the_plan(self, driver: Driver, ir_factory: IrFactory) -> None:
        plan = plan_for(driver, ir_factory(2))
        events: list[ProgressEvent] = []
        result = driver.apply(plan, events.append)
        assert result.version == plan.version
        assert result.added > 0
        state = driver.read_state()
        assert state.version == plan.version
        assert diff_tables(state.tables, plan.tables).empty, diff_tables(state.tables, plan.tables).counts()
        assert events, "apply reports progress"
        assert all(0 <= ev.done <= max(ev.total, ev.done) for ev in events)
        assert driver.health().version in (None, plan.version)

    def test_second_apply_of_the_same_plan_is_a_noop(self, driver: Driver, ir_factory: IrFactory) -> None:
        plan = plan_for(driver, ir_factory(1))
        driver.apply(plan, lambda _: None)
        again = driver.apply(plan, lambda _: None)
        assert (again.added, again.removed, again.modified) == (0, 0, 0)
        assert driver.read_state().version == plan.version

    def test_apply_replaces_the_previous_plan(self, driver: Driver, ir_factory: IrFactory) -> None:
        small, big = plan_for(driver, ir_factory(1)), plan_for(driver, ir_factory(4))
        for plan in (small, big, small):
            driver.apply(plan, lambda _: None)
            state = driver.read_state()
            assert state.version == plan.version
            assert diff_tables(state.tables, plan.tables).empty

    def test_framework_push_verifies(self, driver: Driver, ir_factory: IrFactory) -> None:
        plan = plan_for(driver, ir_factory(2))
        outcome = push(driver, plan)
        assert outcome.ok and outcome.verified, outcome.error
        assert outcome.version_after == plan.version
        assert push(driver, plan).diff == {"added": 0, "removed": 0, "modified": 0}

    def test_counters_are_monotonic(
        self, driver: Driver, ir_factory: IrFactory, traffic: Callable[[], None] | None
    ) -> None:
        driver.apply(plan_for(driver, ir_factory(1)), lambda _: None)
        first = driver.counters()
        if traffic is not None:
            traffic()
        _assert_counters_monotonic(first, driver.counters())

    # ---- the guarantees that need a hook ------------------------------------------

    def test_mid_push_failure_rolls_back(
        self, driver: Driver, ir_factory: IrFactory, inject_apply_failure: Callable[[], None] | None
    ) -> None:
        if inject_apply_failure is None:
            pytest.skip("the driver's tests provide no inject_apply_failure hook")
        old, new = plan_for(driver, ir_factory(1)), plan_for(driver, ir_factory(4))
        assert push(driver, old).ok
        inject_apply_failure()
        outcome = push(driver, new, previous=old)
        assert not outcome.ok and outcome.rolled_back, outcome
        assert outcome.error
        state = driver.read_state()
        assert state.version == old.version
        assert diff_tables(state.tables, old.tables).empty

    def test_reconcile_refills_a_restarted_data_plane(
        self, driver: Driver, ir_factory: IrFactory, restart: Callable[[], None] | None
    ) -> None:
        if restart is None:
            pytest.skip("the driver's tests provide no restart hook")
        plan = plan_for(driver, ir_factory(2))
        assert push(driver, plan).ok
        restart()
        report = reconcile_once(driver, plan)
        assert report.reachable and not report.in_sync and report.restarted_empty
        assert report.repaired, report.error
        state = driver.read_state()
        assert state.version == plan.version and diff_tables(state.tables, plan.tables).empty
        assert reconcile_once(driver, plan).in_sync
