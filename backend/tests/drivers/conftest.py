"""An in-memory data plane and its driver, defined inside the test suite.

It proves the framework (push, reconcile, registry) and the conformance suite without a
real backend. The data plane has a fault injector: fail the n-th write of the next apply,
fail the rollback too, lie about success, or vanish (unreachable).
"""

from __future__ import annotations

import copy
import sys
import time
import types
from collections.abc import Callable, Iterator, Mapping
from typing import Any, ClassVar

import pytest

from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    CapacityError,
    Counters,
    DataPlaneState,
    DriverError,
    Health,
    LaneCounters,
    NativeEntry,
    NativePlan,
    ProgressCallback,
    ProgressEvent,
    PushError,
    TableUsage,
    UnreachableError,
    check_fits,
)
from sliceportal.drivers.push import diff_tables
from sliceportal.rules.ir import FlowKey, RuleIR

CLASSIFIER, SLICES = "classifier", "slices"


class InjectedFault(Exception):
    pass


class MemoryDataPlane:
    """The 'hardware': tables written one entry at a time, so a push can fail half-way."""

    def __init__(self) -> None:
        self.tables: dict[str, list[NativeEntry]] = {CLASSIFIER: [], SLICES: []}
        self.version: str | None = None
        self.writes = 0
        self.fail_at_write: int | None = None  # fail the n-th write of the next apply (1-based)
        self.fail_rollback = False
        self.down = False
        self.hits: dict[int, int] = {}
        self.misses = 0

    def check_up(self) -> None:
        if self.down:
            raise UnreachableError("the memory data plane is down", hint="bring it back up")

    def write(self, table: str, op: str, entry: NativeEntry, old: NativeEntry | None = None) -> None:
        self.check_up()
        self.writes += 1
        if self.fail_at_write is not None:
            self.fail_at_write -= 1
            if self.fail_at_write == 0:
                self.fail_at_write = None
                raise InjectedFault(f"injected fault on write {self.writes}")
        rows = self.tables.setdefault(table, [])
        if op == "insert":
            rows.append(entry)
        elif op == "delete":
            rows.remove(entry)
        else:
            assert old is not None
            rows[rows.index(old)] = entry

    def restore(self, tables: dict[str, list[NativeEntry]], version: str | None) -> None:
        self.check_up()
        if self.fail_rollback:
            raise InjectedFault("injected fault during rollback")
        self.tables, self.version = copy.deepcopy(tables), version

    def restart(self) -> None:
        self.__init__()  # type: ignore[misc]

    def send(self, key: FlowKey) -> None:
        """Classify one packet against what the tables hold, counting the hit."""
        for e in sorted(self.tables[CLASSIFIER], key=lambda e: e["priority"]):
            if all(getattr(key, f) is not None and getattr(key, f) & e["mask"][f] == v for f, v in e["key"].items()):
                self.hits[e["priority"]] = self.hits.get(e["priority"], 0) + 1
                return
        self.misses += 1


class MemoryDriver:
    name: ClassVar[str] = "memory"

    def __init__(self, options: Mapping[str, Any]) -> None:
        self.plane: MemoryDataPlane = options["plane"]
        self.capacity = int(options.get("capacity", 64))
        self.lie = bool(options.get("lie", False))  # report success without writing
        self.bug_version = bool(options.get("bug_version", False))

    def capabilities(self) -> Capabilities:
        return Capabilities(
            driver=self.name,
            lanes=4,
            paths=8,
            match_fields=frozenset({"src_ip", "dst_ip", "dst_port", "dscp"}),
            capacity={CLASSIFIER: self.capacity, SLICES: 16},
            rate_limit=False,
            ecn=False,
        )

    def lower(self, ir: RuleIR) -> NativePlan:
        caps = self.capabilities()
        check_fits(ir, caps)
        classifier = [
            {
                "priority": i,
                "key": {f: t.value for f, t in r.match.items()},
                "mask": {f: t.mask for f, t in r.match.items()},
                "action": {"slice_id": r.action.slice_id, "lane": r.action.lane, "rr_path": r.action.rr_path},
            }
            for i, r in enumerate(ir.rules)
        ]
        slices = [{"key": {"slice_id": s.slice_id}, "action": {"rate_bps": s.qos.rate_bps}} for s in ir.slices]
        tables = {CLASSIFIER: classifier, SLICES: slices}
        for table, rows in tables.items():
            if len(rows) > caps.capacity[table]:
                raise CapacityError(table, len(rows), caps.capacity[table])
        return NativePlan(
            driver=self.name,
            version="0" * 16 if self.bug_version else ir.digest(),
            tables=tables,
            usage={t: TableUsage(used=len(rows), capacity=caps.capacity[t]) for t, rows in tables.items()},
        )

    def apply(self, plan: NativePlan, progress: ProgressCallback) -> ApplyResult:
        started = time.monotonic()
        self.plane.check_up()
        snapshot, old_version = copy.deepcopy(self.plane.tables), self.plane.version
        diff = diff_tables(self.plane.tables, plan.tables)
        ops: list[tuple[str, str, NativeEntry, NativeEntry | None]] = []
        for table, d in diff.tables.items():
            ops += [(table, "delete", e, None) for e in d.removed]
            ops += [(table, "replace", new, old) for old, new in d.modified]
            ops += [(table, "insert", e, None) for e in d.added]
        if self.lie:
            ops = []
        try:
            for i, (table, op, entry, old) in enumerate(ops, start=1):
                self.plane.write(table, op, entry, old)
                progress(ProgressEvent(phase="write", done=i, total=len(ops), message=f"{op} {table}"))
        except (InjectedFault, DriverError) as e:
            progress(ProgressEvent(phase="rollback", done=0, total=1, message=str(e)))
            try:
                self.plane.restore(snapshot, old_version)
            except (InjectedFault, DriverError) as e2:
                raise PushError(f"write failed ({e}) and rollback failed ({e2})", rolled_back=False) from e2
            raise PushError(f"write failed ({e}); previous version restored", rolled_back=True) from e
        if not self.lie:
            self.plane.version = plan.version
        progress(ProgressEvent(phase="commit", done=len(ops), total=len(ops)))
        counts = diff.counts()
        return ApplyResult(version=plan.version, duration_s=time.monotonic() - started, **counts)

    def read_state(self) -> DataPlaneState:
        self.plane.check_up()
        return DataPlaneState(version=self.plane.version, tables=copy.deepcopy(self.plane.tables))

    def counters(self) -> Counters:
        self.plane.check_up()
        return Counters(
            timestamp=time.time(),
            rules={i: LaneCounters(packets=n) for i, n in self.plane.hits.items()},
            misses=LaneCounters(packets=self.plane.misses),
        )

    def health(self) -> Health:
        if self.plane.down:
            return Health(ok=False, detail="down")
        return Health(ok=True, detail="in memory", version=self.plane.version)

    def close(self) -> None:
        pass


@pytest.fixture
def plane() -> MemoryDataPlane:
    return MemoryDataPlane()


@pytest.fixture
def make_driver(plane: MemoryDataPlane) -> Callable[..., MemoryDriver]:
    def make(**options: Any) -> MemoryDriver:
        return MemoryDriver({"plane": plane, **options})

    return make


@pytest.fixture
def memory_driver(make_driver: Callable[..., MemoryDriver]) -> MemoryDriver:
    return make_driver()


@pytest.fixture
def plugin_module() -> Iterator[types.ModuleType]:
    """A module of plugin classes, importable by name, for entry points in registry tests."""
    mod = types.ModuleType("sliceportal_test_plugins")
    mod.MemoryDriver = MemoryDriver  # type: ignore[attr-defined]
    sys.modules[mod.__name__] = mod
    yield mod
    del sys.modules[mod.__name__]
