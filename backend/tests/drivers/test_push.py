"""The transactional push, the diff and the reconcile loop, against the in-memory driver."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from sliceportal.drivers.contract import CapacityError, GeometryError, ProgressEvent, UnsupportedMatchError
from sliceportal.drivers.push import PlanMismatchError, diff_tables, plan_for, push, reconcile_once
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.rules.scenarios import NETFPGA_TARGET, table3_config

MakeDriver = Callable[..., object]


def table3(n: int) -> RuleIR:
    return compile_rules(*table3_config(n), NETFPGA_TARGET).ir


def test_plan_for_refuses_capacity_before_any_write(make_driver: MakeDriver, plane: object) -> None:
    d = make_driver(capacity=16)
    with pytest.raises(CapacityError) as e:
        plan_for(d, table3(8))  # type: ignore[arg-type]
    assert (e.value.table, e.value.needed, e.value.available) == ("classifier", 32, 16)
    assert "32" in str(e.value) and "16" in str(e.value)
    assert plane.writes == 0  # type: ignore[attr-defined]


def test_plan_for_refuses_fields_and_geometry(memory_driver: object, plane: object) -> None:
    with_vni = RuleIR(lanes=4, paths=8, rules=(Rule(Match(vni=Ternary.exact(5, 24)), Action(1, 0, 0)),))
    with pytest.raises(UnsupportedMatchError):
        plan_for(memory_driver, with_vni)  # type: ignore[arg-type]
    with pytest.raises(GeometryError, match="8 paths x 8 lanes"):
        plan_for(memory_driver, RuleIR(lanes=8, paths=8, rules=()))  # type: ignore[arg-type]
    assert plane.writes == 0  # type: ignore[attr-defined]


def test_plan_for_catches_a_plan_for_another_version(make_driver: MakeDriver) -> None:
    with pytest.raises(PlanMismatchError):
        plan_for(make_driver(bug_version=True), table3(1))  # type: ignore[arg-type]


def test_push_streams_progress_and_verifies(memory_driver: object) -> None:
    events: list[ProgressEvent] = []
    plan = plan_for(memory_driver, table3(2))  # type: ignore[arg-type]
    out = push(memory_driver, plan, events.append)  # type: ignore[arg-type]
    assert out.ok and out.verified and out.version_after == plan.version
    assert out.previous_version is None
    assert out.diff == {"added": 10, "removed": 0, "modified": 0}  # 8 rules + 2 slices
    phases = [e.phase for e in events]
    assert phases[0] == "diff" and "write" in phases and phases[-1] == "verify"
    assert out.events == events


def test_mid_push_failure_restores_the_previous_version(memory_driver: object, plane: object) -> None:
    old, new = plan_for(memory_driver, table3(1)), plan_for(memory_driver, table3(4))  # type: ignore[arg-type]
    assert push(memory_driver, old).ok  # type: ignore[arg-type]
    plane.fail_at_write = 5  # type: ignore[attr-defined]
    out = push(memory_driver, new)  # type: ignore[arg-type]
    assert not out.ok and out.rolled_back is True
    assert "injected fault" in (out.error or "")
    assert out.version_after == old.version == out.previous_version
    state = memory_driver.read_state()  # type: ignore[attr-defined]
    assert diff_tables(state.tables, old.tables).empty


def test_failed_rollback_is_reported_as_such(memory_driver: object, plane: object) -> None:
    old, new = plan_for(memory_driver, table3(1)), plan_for(memory_driver, table3(4))  # type: ignore[arg-type]
    push(memory_driver, old)  # type: ignore[arg-type]
    plane.fail_at_write, plane.fail_rollback = 5, True  # type: ignore[attr-defined]
    out = push(memory_driver, new)  # type: ignore[arg-type]
    assert not out.ok and out.rolled_back is False
    assert "rollback failed" in (out.error or "")


def test_a_driver_claiming_success_wrongly_is_caught_and_rolled_back(make_driver: MakeDriver, plane: object) -> None:
    honest = make_driver()
    old = plan_for(honest, table3(1))  # type: ignore[arg-type]
    push(honest, old)  # type: ignore[arg-type]
    liar = make_driver(lie=True)
    new = plan_for(liar, table3(2))  # type: ignore[arg-type]
    out = push(liar, new, previous=old)  # type: ignore[arg-type]
    assert not out.ok and not out.verified
    assert "read-back" in (out.error or "")
    assert out.rolled_back  # re-applying the previous plan is a no-op that verifies


def test_unreachable_data_plane_fails_cleanly_before_writing(memory_driver: object, plane: object) -> None:
    plan = plan_for(memory_driver, table3(1))  # type: ignore[arg-type]
    plane.down = True  # type: ignore[attr-defined]
    out = push(memory_driver, plan)  # type: ignore[arg-type]
    assert not out.ok and out.rolled_back is None and "before any write" in (out.error or "")
    assert plane.writes == 0  # type: ignore[attr-defined]


def test_reconcile_in_sync_restart_and_hand_edit(memory_driver: object, plane: object) -> None:
    plan = plan_for(memory_driver, table3(2))  # type: ignore[arg-type]
    push(memory_driver, plan)  # type: ignore[arg-type]
    assert reconcile_once(memory_driver, plan).in_sync  # type: ignore[arg-type]

    plane.restart()  # type: ignore[attr-defined]
    report = reconcile_once(memory_driver, plan)  # type: ignore[arg-type]
    assert report.restarted_empty and report.repaired and report.found_version is None
    assert report.drift["added"] == 10
    assert reconcile_once(memory_driver, plan).in_sync  # type: ignore[arg-type]

    rows = plane.tables["classifier"]  # type: ignore[attr-defined]
    rows[0] = {**rows[0], "action": {"slice_id": 1, "lane": 0, "rr_path": 7}}  # a hand edit
    report = reconcile_once(memory_driver, plan)  # type: ignore[arg-type]
    assert not report.in_sync and not report.restarted_empty
    assert report.drift == {"added": 0, "removed": 0, "modified": 1}
    assert report.drift_tables == ["classifier"] and report.repaired
    assert reconcile_once(memory_driver, plan).in_sync  # type: ignore[arg-type]


def test_reconcile_reports_an_unreachable_data_plane(memory_driver: object, plane: object) -> None:
    plan = plan_for(memory_driver, table3(1))  # type: ignore[arg-type]
    plane.down = True  # type: ignore[attr-defined]
    report = reconcile_once(memory_driver, plan)  # type: ignore[arg-type]
    assert not report.reachable and not report.repaired and "down" in (report.error or "")


def test_diff_tables_added_removed_modified_and_duplicates() -> None:
    a = {"key": {"x": 1}, "mask": {"x": 255}, "priority": 0, "action": {"lane": 1}}
    a2 = {**a, "action": {"lane": 2}}
    b = {"key": {"x": 2}, "mask": {"x": 255}, "priority": 1, "action": {"lane": 1}}
    c = {"key": {"x": 3}, "mask": {"x": 255}, "priority": 2, "action": {"lane": 1}}
    d = diff_tables({"t": [a, b, b], "gone": [c]}, {"t": [b, a2, c], "new": [c]})
    assert d.tables["t"].modified == [(a, a2)]
    assert d.tables["t"].added == [c]
    assert d.tables["t"].removed == [b]  # one of the two copies of b went
    assert d.tables["gone"].removed == [c] and d.tables["new"].added == [c]
    assert d.counts() == {"added": 2, "removed": 2, "modified": 1}
    assert diff_tables({"t": [a, b]}, {"t": [b, a]}).empty  # order does not matter


def test_target_spec_from_capabilities_compiles_what_plan_for_accepts(memory_driver: object) -> None:
    from sliceportal.drivers.push import target_spec

    caps = memory_driver.capabilities()  # type: ignore[attr-defined]
    target = target_spec(caps, max_rules=caps.capacity["classifier"])
    assert (target.lanes, target.paths, target.max_rules) == (4, 8, 64)
    result = compile_rules(*table3_config(16), target)
    assert result.fits
    plan = plan_for(memory_driver, result.ir)  # type: ignore[arg-type]
    assert plan.usage["classifier"].used == 64
    assert not compile_rules(
        *table3_config(16),
        target_spec(caps, max_rules=63),
    ).fits


def test_check_capacity_reads_usage_of_resources_that_are_not_entry_lists() -> None:
    from sliceportal.drivers.contract import NativePlan, TableUsage
    from sliceportal.drivers.push import check_capacity

    # e.g. an XDP driver's "rules" bit positions: counted in usage, no table of entries
    plan = NativePlan(driver="x", version="v", tables={"ports": []}, usage={"rules": TableUsage(used=9, capacity=8)})
    with pytest.raises(CapacityError) as e:
        check_capacity(plan, {})
    assert (e.value.table, e.value.needed, e.value.available) == ("rules", 9, 8)
    check_capacity(plan, {"rules": 16})  # the declared capacity is what counts
    # a default entry listed in a table but not counted in usage does not take a slot
    full = NativePlan(
        driver="x",
        version="v",
        tables={"t": [{"default": True}, {"k": 1}]},
        usage={"t": TableUsage(used=1, capacity=1)},
    )
    check_capacity(full, {"t": 1})


def test_ir_level_diff_between_two_deployments() -> None:
    from sliceportal.drivers.push import ir_tables
    from sliceportal.rules.spec import TargetSpec

    tenants, slices = table3_config(2)
    old = table3(2)
    again = compile_rules(tenants, slices, NETFPGA_TARGET).ir  # a recompile changes nothing
    assert diff_tables(ir_tables(old), ir_tables(again)).empty
    four = table3(4)
    d = diff_tables(ir_tables(old), ir_tables(four))
    assert d.counts() == {"added": 8 + 2, "removed": 0, "modified": 0}  # 2 slices x 4 lanes, 2 slice entries
    fixed = TargetSpec(lanes=4, paths=8, match_fields=NETFPGA_TARGET.match_fields, miss=MissPolicy(MissMode.FIXED))
    d = diff_tables(ir_tables(old), ir_tables(compile_rules(tenants, slices, fixed).ir))
    assert d.counts() == {"added": 0, "removed": 0, "modified": 1} and list(d.tables) == ["miss"]
