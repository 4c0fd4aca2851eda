"""Drivers of one process share a lowering (a slice deployed to a fleet lowers once for every
switch that holds the same), and only when everything it depends on is the same."""

from __future__ import annotations

from irs import two_tenants

from sliceportal.rules.ir import Qos
from sliceportal_p4rt.codec import Update
from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.lowering import PortPlan, lower_ir, with_full_masks

OPTIONS = {"access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3}


def _lowering(d: Driver, version: str) -> object:
    return d._lowered[version][1]


def test_switches_that_hold_nothing_share_one_lowering() -> None:
    ir = two_tenants()
    a, b = Driver(OPTIONS), Driver(OPTIONS)  # not connected: they hold nothing
    pa, pb = a.lower(ir), b.lower(ir)
    assert _lowering(a, pa.version) is _lowering(b, pb.version)  # one lowering, not two
    # ... and it is the lowering this switch would make alone
    alone = with_full_masks(lower_ir(ir, PortPlan({1: 100, 2: 200}, (3,), 3), "vqueue", 8, a.sizes), a.widths)
    assert pa.tables == pb.tables == alone
    # the plan and its wire bytes too, for switches with the same owner tag; another tag's
    # bytes differ (the tag is in every entry), so its plan is its own
    assert pa is pb
    other = Driver({**OPTIONS, "owner": "another-portal"})
    po = other.lower(ir)
    assert po is not pa and po.tables == pa.tables
    table = next(t for t, es in pa.tables.items() if any("match" in e for e in es))
    i = next(i for i, e in enumerate(pa.tables[table]) if "match" in e)
    mine = a.codec.pre_encoded((Update.INSERT, table, pa.tables[table][i], None))
    theirs = other.codec.pre_encoded((Update.INSERT, table, po.tables[table][i], None))
    assert mine is not None and theirs is not None and mine != theirs and b"another-portal" in theirs


def test_other_options_or_another_ir_lower_anew() -> None:
    """What the lowering depends on is in its key: a switch with other options, or another IR,
    is never given a lowering made for another."""
    policed = two_tenants(qos=Qos(rate_bps=10_000_000))
    for options, ir in (
        ({**OPTIONS, "qos_mode": "meter"}, policed),
        ({**OPTIONS, "access_ports": {1: 100}}, policed),
        ({**OPTIONS, "uplink_port": 2, "trunk_ports": [2]}, policed),
    ):
        assert Driver(options).lower(ir).tables != Driver(OPTIONS).lower(ir).tables, options
    assert Driver(OPTIONS).lower(policed).tables != Driver(OPTIONS).lower(two_tenants()).tables


def test_switches_that_read_back_the_same_entries_decode_them_once(start_target) -> None:
    """A fleet's read-backs after one push are the same entries: decoded once a process
    (codec._DECODED), each switch's reading still its own and equal to what it holds."""
    ir = two_tenants()
    a, b = (Driver({**OPTIONS, "address": start_target().address, "timeout_s": 5}) for _ in range(2))
    for d in (a, b):
        d.apply(d.lower(ir), lambda e: None)
    ta, tb = (d.codec.tables_of(d._connect().read(d.codec.read_request())) for d in (a, b))
    assert ta == tb == a.lower(ir).tables == b.read_state().tables
    entry = next(e for es in ta.values() for e in es if "match" in e)
    assert any(e is entry for es in tb.values() for e in es)  # the same object: one decode
    a.close()
    b.close()
