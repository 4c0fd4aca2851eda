"""The client sends Write requests as bytes (no deep copy of every update): those bytes are
the WriteRequest protobuf itself builds, for any number and size of updates."""

from __future__ import annotations

import pytest
from irs import two_tenants
from p4.v1 import p4runtime_pb2

from sliceportal_p4rt.client import write_request_bytes
from sliceportal_p4rt.driver import Driver


@pytest.mark.parametrize("count", [0, 1, 3, 200])
def test_request_bytes_parse_as_the_request_protobuf_builds(count: int) -> None:
    d = Driver({})
    plan = d.lower(two_tenants())
    entries = [(t, e) for t, lst in plan.tables.items() for e in lst]
    updates = [d._update(p4runtime_pb2.Update.INSERT, *entries[i % len(entries)]) for i in range(count)]
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
