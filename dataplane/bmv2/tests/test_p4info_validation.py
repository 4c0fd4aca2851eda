"""The bundled target rejects what BMv2/PI rejects, with the same gRPC codes."""

from __future__ import annotations

import itertools
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2, status_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from bmv2_target.server import load_p4info_text
from bmv2_target.testing import P4INFO, Target

INFO = load_p4info_text(P4INFO)
TABLES = {t.preamble.name: t for t in INFO.tables}
ACTIONS = {a.preamble.name: a.preamble.id for a in INFO.actions}
CLASSIFIER = TABLES["SlicingIngress.classifier.classifier"]
PORT_TENANT = TABLES["SlicingIngress.tenant.port_tenant"]


class Client:
    def __init__(self, address: str, election: int) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.election = election
        self.hold = threading.Event()
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = 1
        req.arbitration.election_id.low = election

        def reqs() -> Iterator[p4runtime_pb2.StreamMessageRequest]:
            yield req
            self.hold.wait(30)

        self.stream = self.stub.StreamChannel(reqs())
        self.status = next(self.stream).arbitration.status.code

    def write(self, *updates: p4runtime_pb2.Update) -> None:
        req = p4runtime_pb2.WriteRequest(device_id=1, updates=updates)
        req.election_id.low = self.election
        self.stub.Write(req)

    def close(self) -> None:
        self.hold.set()
        self.stream.cancel()
        self.channel.close()


@pytest.fixture(scope="module")
def target() -> Iterator[Target]:
    t = Target("--priority-queues", "8")
    yield t
    t.stop()


# A new election id for each test's primary: the previous test's stream is cancelled on the
# client's side, and the target may not have seen it end when the next one arbitrates (with
# the same id it answered "Election id already exists"). All above the backups' 5.
ELECTIONS = itertools.count(10)


@pytest.fixture
def primary(target: Target) -> Iterator[Client]:
    c = Client(target.address, next(ELECTIONS))
    assert c.status == code_pb2.OK
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    req.election_id.low = c.election
    req.config.p4info.CopyFrom(INFO)
    c.stub.SetForwardingPipelineConfig(req)  # fresh, empty state per test
    yield c
    c.close()


def port_entry(port: bytes = b"\x01", action: str = "SlicingIngress.tenant.set_trunk") -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = u.entity.table_entry
    te.table_id = PORT_TENANT.preamble.id
    te.match.add(field_id=1).exact.value = port
    te.action.action.action_id = ACTIONS[action]
    return u


def classifier_entry(value: bytes, mask: bytes, priority: int = 10) -> p4runtime_pb2.Update:
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
    te = u.entity.table_entry
    te.table_id, te.priority = CLASSIFIER.preamble.id, priority
    te.match.add(field_id=1).exact.value = b"\x01"
    m = te.match.add(field_id=6)  # src_ip
    m.ternary.value, m.ternary.mask = value, mask
    a = te.action.action
    a.action_id = ACTIONS["SlicingIngress.classifier.set_slice"]
    a.params.add(param_id=1, value=b"\x01")
    a.params.add(param_id=2, value=b"\x02")
    return u


def code_of(client: Client, *updates: p4runtime_pb2.Update) -> list[int]:
    """Per-update canonical codes from the batch error details (PI's format)."""
    try:
        client.write(*updates)
    except grpc.RpcError as e:
        assert e.code() == grpc.StatusCode.UNKNOWN
        for key, value in e.trailing_metadata():
            if key == "grpc-status-details-bin":
                status = status_pb2.Status.FromString(value)
                out = []
                for d in status.details:
                    err = p4runtime_pb2.Error()
                    d.Unpack(err)
                    out.append(err.canonical_code)
                return out
        raise
    return [code_pb2.OK] * len(updates)


def test_valid_entries_are_accepted(primary: Client) -> None:
    assert code_of(primary, port_entry(), classifier_entry(b"\x0a\x01\x00\x00", b"\xff\xff\x00\x00")) == [
        0,
        0,
    ]


def test_unknown_table_and_action_ids_are_invalid(primary: Client) -> None:
    # What simple_switch_grpc (PI) answers; drivers/p4rt/tests/test_differential_writes.py checks.
    u = port_entry()
    u.entity.table_entry.table_id = 0x02000001
    v = port_entry()
    v.entity.table_entry.action.action.action_id = 0x01000001
    assert code_of(primary, u, v) == [code_pb2.INVALID_ARGUMENT, code_pb2.INVALID_ARGUMENT]


def test_bad_match_kind_width_mask_and_priority_are_invalid(primary: Client) -> None:
    wrong_kind = port_entry()
    m = wrong_kind.entity.table_entry.match[0]
    m.ternary.value, m.ternary.mask = b"\x01", b"\x01"
    too_wide = port_entry(b"\x02\x00")  # 512 does not fit 9 bits
    outside_mask = classifier_entry(b"\x0a\x01\x00\x01", b"\xff\xff\x00\x00")
    zero_mask = classifier_entry(b"\x00", b"\x00")
    no_priority = classifier_entry(b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00", priority=0)
    default_only = port_entry(action="SlicingIngress.tenant.drop_unallocated_port")
    foreign_action = port_entry(action="SlicingIngress.fwd.forward")
    missing_exact = classifier_entry(b"\x0a\x00\x00\x00", b"\xff\x00\x00\x00")
    del missing_exact.entity.table_entry.match[0]
    codes = code_of(
        primary,
        wrong_kind,
        too_wide,
        outside_mask,
        zero_mask,
        no_priority,
        default_only,
        foreign_action,
        missing_exact,
    )
    # PI refuses a default-only action in an entry with PERMISSION_DENIED, the rest INVALID_ARGUMENT.
    assert codes == [code_pb2.INVALID_ARGUMENT] * 5 + [code_pb2.PERMISSION_DENIED] + [code_pb2.INVALID_ARGUMENT] * 2


def test_duplicates_and_missing_entries(primary: Client) -> None:
    assert code_of(primary, port_entry(), port_entry()) == [code_pb2.OK, code_pb2.ALREADY_EXISTS]
    modify = port_entry(b"\x05")
    modify.type = p4runtime_pb2.Update.MODIFY
    delete = port_entry(b"\x06")
    delete.type = p4runtime_pb2.Update.DELETE
    assert code_of(primary, modify, delete) == [code_pb2.NOT_FOUND, code_pb2.NOT_FOUND]


def test_const_default_action_cannot_change(primary: Client) -> None:
    u = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    te = u.entity.table_entry
    te.table_id, te.is_default_action = PORT_TENANT.preamble.id, True
    te.action.action.action_id = ACTIONS["SlicingIngress.tenant.drop_unallocated_port"]
    assert code_of(primary, u) == [code_pb2.PERMISSION_DENIED]


def test_only_the_primary_writes(target: Target, primary: Client) -> None:
    backup = Client(target.address, 5)
    assert backup.status == code_pb2.ALREADY_EXISTS
    with pytest.raises(grpc.RpcError) as err:
        backup.write(port_entry())
    assert err.value.code() == grpc.StatusCode.PERMISSION_DENIED
    backup.close()


def test_unsupported_atomicity_is_unimplemented(primary: Client) -> None:
    req = p4runtime_pb2.WriteRequest(device_id=1, atomicity=p4runtime_pb2.WriteRequest.DATAPLANE_ATOMIC)
    req.election_id.low = primary.election
    req.updates.append(port_entry())
    with pytest.raises(grpc.RpcError) as err:
        primary.stub.Write(req)
    assert err.value.code() == grpc.StatusCode.UNIMPLEMENTED


def test_a_foreign_p4info_is_refused(primary: Client) -> None:
    req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
        device_id=1, action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT
    )
    req.election_id.low = primary.election
    req.config.p4info.pkg_info.arch = "v1model"
    with pytest.raises(grpc.RpcError) as err:
        primary.stub.SetForwardingPipelineConfig(req)
    assert err.value.code() == grpc.StatusCode.INVALID_ARGUMENT


def read_classifier(client: Client) -> list[p4runtime_pb2.TableEntry]:
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.table_id = CLASSIFIER.preamble.id
    return [e.table_entry for resp in client.stub.Read(req) for e in resp.entities]


def test_the_engines_write_path_and_the_full_validator_agree_in_one_batch(primary: Client) -> None:
    """Write is applied by the engine for valid table entries and by the Python validator
    for the rest, in request order: a batch that mixes them keeps P4Runtime's semantics, and
    what the fast path stored reads back whole (metadata, priority, parameters)."""
    fast = classifier_entry(b"\x0a\x01\x00\x00", b"\xff\xff\x00\x00", priority=7)
    fast.entity.table_entry.metadata = b"owner"
    fast.entity.table_entry.match[0].exact.value = b"\x00\x01"  # zero-padded: still tenant 1
    default = p4runtime_pb2.Update(type=p4runtime_pb2.Update.MODIFY)
    default.entity.table_entry.table_id = CLASSIFIER.preamble.id
    default.entity.table_entry.is_default_action = True
    act = default.entity.table_entry.action.action
    act.action_id = ACTIONS["SlicingIngress.classifier.miss_fixed"]
    act.params.add(param_id=1, value=b"\x03")
    duplicate = classifier_entry(b"\x0a\x01\x00\x00", b"\xff\xff\x00\x00", priority=7)
    modify = classifier_entry(b"\x0a\x01\x00\x00", b"\xff\xff\x00\x00", priority=7)
    modify.type = p4runtime_pb2.Update.MODIFY
    modify.entity.table_entry.action.action.params[1].value = b"\x05"  # lane 5
    modify.entity.table_entry.metadata = b"owner"
    gone = classifier_entry(b"\x0a\x02\x00\x00", b"\xff\xff\x00\x00", priority=7)
    gone.type = p4runtime_pb2.Update.DELETE
    codes = code_of(primary, fast, default, duplicate, modify, gone)
    assert codes == [code_pb2.OK, code_pb2.OK, code_pb2.ALREADY_EXISTS, code_pb2.OK, code_pb2.NOT_FOUND]
    (entry,) = read_classifier(primary)
    assert (entry.priority, entry.metadata) == (7, b"owner")
    assert [(p.param_id, p.value) for p in entry.action.action.params] == [(1, b"\x01"), (2, b"\x05")]
    keys = [(m.field_id, m.exact.value or m.ternary.value) for m in entry.match]
    assert keys == [(1, b"\x01"), (6, b"\x0a\x01\x00\x00")]
    delete = classifier_entry(b"\x0a\x01\x00\x00", b"\xff\xff\x00\x00", priority=7)
    delete.type = p4runtime_pb2.Update.DELETE
    assert code_of(primary, delete) == [code_pb2.OK]
    assert read_classifier(primary) == []
