"""The netfpga driver against the running Verilator model: lowering, push, read-back,
fault injection (a dropped connection mid-push keeps the previous table), counters,
P4-NetFPGA export, bad input."""

from __future__ import annotations

import csv
import importlib.metadata
from pathlib import Path

import pytest
from scapy.utils import wrpcap

from sliceportal.drivers import contract
from sliceportal.drivers.contract import (
    CapacityError,
    DriverError,
    GeometryError,
    ProgressEvent,
    PushError,
    UnreachableError,
    UnsupportedMatchError,
)
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Flow, build
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.experiment import table2_ir
from sliceportal_netfpga.simulator import SimProcess

from .conftest import push_cut_after


def events() -> tuple[list[ProgressEvent], contract.ProgressCallback]:
    seen: list[ProgressEvent] = []
    return seen, seen.append


def test_plugin_is_registered_and_satisfies_the_protocol(tmp_path: Path) -> None:
    eps = importlib.metadata.entry_points(group="sliceportal.drivers")
    ep = next(e for e in eps if e.name == "netfpga")
    cls = ep.load()
    assert cls is Driver
    d = cls({"address": str(tmp_path / "none.sock")})
    assert isinstance(d, contract.Driver)
    caps = d.capabilities()
    assert caps.match_fields == {"src_ip", "dst_ip", "dst_port", "dscp"}
    assert (caps.paths, caps.lanes, caps.capacity) == (8, 4, {"tcam": 64})


def test_lower_refuses_before_touching_the_data_plane(tmp_path: Path) -> None:
    d = Driver({"address": str(tmp_path / "absent.sock")})
    plan = d.lower(table2_ir(16))
    assert plan.usage["tcam"].used == 64
    with pytest.raises(CapacityError) as e:
        d.lower(table2_ir(17))
    assert (e.value.needed, e.value.available) == (68, 64)
    with pytest.raises(UnsupportedMatchError):
        d.lower(RuleIR(lanes=4, paths=8, rules=(Rule(Match(vni=Ternary.exact(5, 24)), Action(1, 0, 0)),)))
    with pytest.raises(GeometryError):
        d.lower(table2_ir(1, paths=4))
    # A fixed miss policy costs one catch-all entry.
    fixed = RuleIR(lanes=4, paths=8, rules=table2_ir(1).rules, miss=MissPolicy(MissMode.FIXED, 1, 2))
    assert d.lower(fixed).tables["tcam"][-1]["action"] == {"slice_id": 0, "lane": 1, "rr_path": 2}
    # Nothing connected: operations that need the device say so.
    with pytest.raises(UnreachableError):
        d.read_state()
    assert not d.health().ok


def test_bad_options_are_typed_errors() -> None:
    for bad in ({}, {"address": "x", "paths": 3}, {"address": "x", "capacity": 0}, {"address": "x", "bogus": 1}):
        with pytest.raises(DriverError):
            Driver(bad)


def test_push_read_back_and_reconcile(sim: SimProcess) -> None:
    d = Driver({"address": sim.address})
    try:
        assert d.read_state().version is None
        ir = table2_ir(16)
        plan = d.lower(ir)
        seen, cb = events()
        result = d.apply(plan, cb)
        assert (result.version, result.added) == (plan.version, 64)
        assert {e.phase for e in seen} >= {"diff", "write", "verify", "commit"}
        state = d.read_state()
        assert state.version == plan.version
        assert state.tables == plan.tables
        assert d.health().ok and d.health().version == plan.version
        # A second, smaller push replaces the table whole.
        small = d.lower(table2_ir(2))
        result = d.apply(small, lambda _: None)
        assert (result.removed, result.modified) == (56, 0)
        assert d.read_state().tables == small.tables
    finally:
        d.close()


@pytest.mark.parametrize("fail_after", [0, 5, 100, 320, 323])
def test_connection_lost_mid_push_keeps_previous_table(sim: SimProcess, fail_after: int) -> None:
    d = Driver({"address": sim.address})
    try:
        # 320 entry words (those of 64 entries that differ from the model's zeroed bank 0),
        # count, 2 version words, then the flip: every stage is hit. And the data plane still
        # works: the next push goes through.
        new = push_cut_after(d, sim, table2_ir(3), table2_ir(16), fail_after)
        assert d.read_state().version == new.version
    finally:
        d.close()


def test_counters_follow_the_reference(sim: SimProcess, tmp_path: Path) -> None:
    d = Driver({"address": sim.address})
    try:
        ir = table2_ir(2)
        d.apply(d.lower(ir), lambda _: None)
        flows = [
            Flow(f"10.{s}.0.{u}", "10.99.0.1", 5000 + 2 * svc, dscp=svc % 8)
            for s in range(3)
            for u in range(1, 4)
            for svc in range(16)
        ]
        wrpcap(str(tmp_path / "in.pcap"), [build(f, b"c" * 100) for f in flows])
        sim.command(f"CAPTURE {tmp_path / 'out.pcap'}")
        sim.command(f"INJECT {tmp_path / 'in.pcap'} 200")  # gaps: no congestion, nothing dropped
        sim.command("RUN")
        c = d.counters()
        hits = [0] * len(ir.rules)
        for f in flows:
            i = ir.classify(f.key()).rule_index
            if i is not None:
                hits[i] += 1
        assert [c.rules[i].packets for i in range(len(ir.rules))] == hits
        assert c.misses.packets == len(flows) - sum(hits)
        assert sum(lc.packets for lc in c.lanes.values()) == len(flows)
        assert c.slices[1].packets == sum(hits[0:4])
        # Every packet left on the lane / path the reference says.
        with open(tmp_path / "out.pcap.csv") as fh:
            got = sorted((int(r["rr_path"]), int(r["lane"]), int(r["slice_id"])) for r in csv.DictReader(fh))
        want = sorted(
            (ir.classify(f.key()).rr_path, ir.classify(f.key()).lane, ir.classify(f.key()).slice_id) for f in flows
        )
        assert got == want
    finally:
        d.close()


def test_export_p4_netfpga_commands(tmp_path: Path) -> None:
    d = Driver({"address": str(tmp_path / "x.sock")})
    text = d.export_p4_commands(d.lower(table2_ir(1)))
    lines = text.splitlines()
    assert len(lines) == 4
    assert lines[1] == (
        "table_tcam_add_entry slice_classifier 1 set_queue 0xa000000/0xffffff00 0x0/0x0 0x1390/0xfff8 0x0/0x0 => 0 1 1"
    )
    with pytest.raises(PushError):
        d.export_p4_commands(d.lower(table2_ir(1)).model_copy(update={"driver": "xdp"}))


def test_bad_control_input_is_refused_and_changes_nothing(sim: SimProcess, tmp_path: Path) -> None:
    (tmp_path / "junk.pcap").write_bytes(b"not a pcap")
    for line in (
        "W 0x100000000 1",
        "W 0x48 0x1ffffffff",
        "R zz",
        "R",
        "INJECT /nonexistent.pcap",
        f"INJECT {tmp_path / 'junk.pcap'}",
        "RATES 0 1",
        "BOGUS",
    ):
        with pytest.raises(DriverError):
            sim.command(line)
    assert sim.command("R 0x48") == "0"
    assert sim.command("STATS").startswith("cycle=")
