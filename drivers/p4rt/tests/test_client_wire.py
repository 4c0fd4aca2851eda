"""The client sends Write requests as bytes (no deep copy of every update): those bytes are
the WriteRequest protobuf itself builds, for any number and size of updates."""

from __future__ import annotations

import copy

import pytest
from irs import two_tenants
from p4.v1 import p4runtime_pb2

from sliceportal.drivers.push import diff_tables
from sliceportal.rules.ir import RuleIR
from sliceportal_p4rt.client import write_request_bytes
from sliceportal_p4rt.codec import ident
from sliceportal_p4rt.driver import Driver

Update = p4runtime_pb2.Update


@pytest.mark.parametrize("count", [0, 1, 3, 200])
def test_request_bytes_parse_as_the_request_protobuf_builds(count: int) -> None:
    d = Driver({})
    plan = d.lower(two_tenants())
    entries = [(t, e) for t, lst in plan.tables.items() for e in lst]
    updates = [d.codec.update(p4runtime_pb2.Update.INSERT, *entries[i % len(entries)]) for i in range(count)]
    big = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)  # > 127 bytes: a multi-byte length
    big.entity.table_entry.metadata = bytes(range(256)) * 2
    updates.append(big)
    head = p4runtime_pb2.WriteRequest(device_id=7)
    head.election_id.low, head.election_id.high = 1 << 40, 3
    want = p4runtime_pb2.WriteRequest()
    want.CopyFrom(head)
    want.updates.extend(updates)
    mixed = [u.SerializeToString() if i % 2 else u for i, u in enumerate(updates)]
    assert p4runtime_pb2.WriteRequest.FromString(write_request_bytes(head, mixed)) == want


@pytest.mark.parametrize("utype", [Update.INSERT, Update.MODIFY, Update.DELETE])
@pytest.mark.parametrize("qos_mode", ["vqueue", "meter"])
def test_updates_written_as_bytes_are_what_the_protobuf_api_builds(utype: int, qos_mode: str) -> None:
    """Every entry of a lowered plan (exact and ternary matches, defaults, actions with and
    without parameters, meters): wire.py's bytes parse into ``EntryCodec.update``'s message."""
    d = Driver({"qos_mode": qos_mode, "access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3})
    plan = d.lower(two_tenants())
    seen = 0
    ops = []
    for table, entries in plan.tables.items():
        for e in entries:
            want = d.codec.update(utype, table, e)
            got_type, data = d.codec.update_bytes(utype, table, e)
            assert p4runtime_pb2.Update.FromString(data) == want, (table, e)
            assert got_type == want.type
            # the push path's inline encoder (per-table constants) writes the same message
            assert p4runtime_pb2.Update.FromString(d.codec.encode((utype, table, e, None))) == want, (table, e)
            assert d._kind((utype, table, e, None)) == want.type
            if "match" in e:  # and from the bytes lower() built for the plan
                assert p4runtime_pb2.Update.FromString(d.codec.encode((utype, table, e, ident(e)))) == want
            # framed as the push sends them: one WriteRequest ``updates`` field each
            for key in (None, ident(e)):
                framed = p4runtime_pb2.WriteRequest.FromString(d.codec.frame((utype, table, e, key)) * 2)
                assert list(framed.updates) == [want, want], (table, e)
            ops.append((utype, table, e, None))
            seen += 1
    assert seen > 10
    kinds = (Update.INSERT, Update.DELETE, Update.MODIFY)
    assert d._counts(ops) == {k: sum(1 for op in ops if d._kind(op) == k) for k in kinds}


def test_diff_from_cached_identities_is_the_diff_of_copies() -> None:
    """The diff of two lowerings finds their entries' identities cached (the last two
    lowerings'); the same plans as copies (read back from the database) find none: the
    updates, and the bytes framed for them, are the same."""
    d = Driver({"access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3})
    ir = two_tenants()
    held = d.lower(ir).tables
    want = d.lower(
        RuleIR(lanes=ir.lanes, paths=1, rules=ir.rules[2:] + ir.rules[:1], slices=ir.slices, tenants=ir.tenants)
    ).tables
    assert all(id(e) in d.codec.idents for t in (held, want) for lst in t.values() for e in lst if "match" in e)
    fast, _ = d._diff(held, want)
    slow, _ = d._diff(copy.deepcopy(held), copy.deepcopy(want))
    assert fast == slow and {op[0] for op in fast} >= {Update.INSERT, Update.DELETE}
    assert [d.codec.frame(op) for op in fast] == [d.codec.frame(op) for op in slow]


def test_a_read_back_is_decoded_again_only_when_its_bytes_changed() -> None:
    """``tables_of`` keeps the last read's decoding: the same bytes give the same tables (as
    copies a caller may change), any other read is decoded anew."""
    d = Driver({"access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3})
    plan = d.lower(two_tenants())
    entities = [d.codec.update(Update.INSERT, t, e).entity for t, es in plan.tables.items() for e in es]
    first = d.codec.tables_of(entities)
    assert diff_tables(first, plan.tables).empty  # what was written decodes to the plan
    first["vlan_tenant_probe"] = []
    next(lst for lst in first.values() if lst).clear()
    again = d.codec.tables_of([copy.deepcopy(e) for e in entities])
    assert diff_tables(again, plan.tables).empty and "vlan_tenant_probe" not in again
    fewer = d.codec.tables_of(entities[1:])
    assert diff_tables(fewer, plan.tables).counts() == {"added": 1, "removed": 0, "modified": 0}
    changed = copy.deepcopy(entities)
    te = next(e.table_entry for e in changed if e.HasField("table_entry") and len(e.table_entry.action.action.params))
    te.action.action.params[0].value = b"\x07"
    assert diff_tables(d.codec.tables_of(changed), plan.tables).counts()["modified"] == 1
    assert diff_tables(d.codec.tables_of(entities), plan.tables).empty
