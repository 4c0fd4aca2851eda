"""Driver <-> bundled target over real gRPC: push, read back, ownership, framework guarantees."""

from __future__ import annotations

import threading
from collections.abc import Callable

import grpc
import pytest
from irs import TENANT_A, TENANT_B, ip, two_tenants
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from sliceportal.drivers.contract import (
    CapacityError,
    Driver,
    GeometryError,
    OptionsError,
    ProgressEvent,
    PushError,
    UnreachableError,
)
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, SliceEntry, Ternary
from sliceportal_p4rt.driver import Driver as P4rtDriver
from sliceportal_p4rt.p4info import CLASSIFIER


def driver(address: str, **opts: object) -> P4rtDriver:
    return P4rtDriver({"address": address, "timeout_s": 5, **opts})


def events() -> tuple[list[ProgressEvent], Callable[[ProgressEvent], None]]:
    seen: list[ProgressEvent] = []
    return seen, seen.append


def test_satisfies_the_protocol_and_reports_p4info_sizes() -> None:
    d = P4rtDriver({})
    assert isinstance(d, Driver)
    caps = d.capabilities()
    assert (caps.lanes, caps.paths) == (8, 1)
    assert caps.capacity[CLASSIFIER] == 4096
    assert "vni" in caps.match_fields and "teid" in caps.match_fields


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"p4info": "/etc/passwd"}, "p4info"),
        ({"device_config": "../../etc/shadow"}, "device_config"),
        ({"address": "/var/run/p4rt.sock"}, "address"),
        ({"address": "unix:///tmp/x:9559"}, "address"),
        ({"address": "127.0.0.1"}, "address"),
        ({"address": "127.0.0.1:99999"}, "address"),
        ({"address": "::1:9559"}, "address"),
    ],
)
def test_options_name_no_server_path_and_refuse_one_naming_the_field(options: dict[str, str], field: str) -> None:
    with pytest.raises(OptionsError, match=field):
        P4rtDriver(options)


@pytest.mark.parametrize("address", ["127.0.0.1:9559", "bmv2:9559", "switch-1.lab.example:50001", "[::1]:9559"])
def test_host_port_addresses_are_accepted(address: str) -> None:
    # beyond loopback plaintext is a choice said out loud (test_tls.py)
    assert P4rtDriver({"address": address, "plaintext": True}).opts.address == address


def test_the_driver_ships_p4c_output_as_its_program() -> None:
    d = P4rtDriver({})
    assert d.program.device_config.startswith(b"{")  # the BMv2 JSON p4c wrote
    assert (
        d.p4info.table(CLASSIFIER).preamble.id
        == {t.preamble.name: t.preamble.id for t in d.program.p4info.tables}[CLASSIFIER]
    )


def test_push_reads_back_the_lowered_normal_form(target) -> None:
    d = driver(target.address)
    ir = two_tenants()
    plan = d.lower(ir)
    seen, cb = events()
    result = d.apply(plan, cb)
    assert result.added == sum(len(v) for v in plan.tables.values()) - 1  # default entry is a modify
    state = d.read_state()
    assert state.tables == plan.tables
    assert state.version == ir.digest()
    assert any(e.phase == "write" for e in seen)
    # A second push of the same plan changes nothing.
    again = d.apply(plan, cb)
    assert (again.added, again.removed, again.modified) == (0, 0, 0)
    d.close()


def test_diff_push_removes_only_what_went_away(target) -> None:
    d = driver(target.address)
    ir = two_tenants()
    d.apply(d.lower(ir), lambda e: None)
    smaller = RuleIR(lanes=ir.lanes, paths=1, rules=ir.rules[:2], slices=ir.slices, tenants=ir.tenants)
    result = d.apply(d.lower(smaller), lambda e: None)
    assert result.removed == 2 and result.added == 0
    assert d.read_state().tables == d.lower(smaller).tables
    d.close()


def _foreign_insert(address: str, d: P4rtDriver) -> p4runtime_pb2.TableEntry:
    """Another controller (higher election id, so primary) writes its own classifier entry."""
    ch = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    req = p4runtime_pb2.StreamMessageRequest()
    req.arbitration.device_id = 1
    req.arbitration.election_id.low = 99
    hold = threading.Event()

    def requests():  # the stream stays open (primary) until the write is done
        yield req
        hold.wait(10)

    stream = stub.StreamChannel(requests())
    assert next(stream).arbitration.status.code == 0
    t = d.p4info.table(CLASSIFIER)
    te = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=7, metadata=b"onos")
    te.match.add(field_id=1).exact.value = b"\x09"
    te.action.action.action_id = d.p4info.action("SlicingIngress.classifier.set_slice").preamble.id
    te.action.action.params.add(param_id=1, value=b"\x05")
    te.action.action.params.add(param_id=2, value=b"\x01")
    w = p4runtime_pb2.WriteRequest(device_id=1)
    w.election_id.low = 99
    w.updates.add(type=p4runtime_pb2.Update.INSERT).entity.table_entry.CopyFrom(te)
    stub.Write(w)
    hold.set()
    stream.cancel()
    ch.close()
    return te


def test_never_touches_another_controllers_entries(target) -> None:
    d = driver(target.address)
    d.apply(d.lower(two_tenants()), lambda e: None)
    d.close()
    _foreign_insert(target.address, d)
    d2 = driver(target.address, election_id=100)
    empty = RuleIR(lanes=8, paths=1, rules=(), slices=(), tenants=())
    d2.apply(d2.lower(empty), lambda e: None)
    state = d2.read_state().tables
    assert state == d2.lower(empty).tables
    assert [e for e in state[CLASSIFIER] if not e.get("default")] == []
    # The foreign entry is still there: read everything with a raw client.
    ch = grpc.insecure_channel(target.address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().table_entry.table_id = d.p4info.table(CLASSIFIER).preamble.id
    got = [e.table_entry for r in stub.Read(req) for e in r.entities]
    assert [e.metadata for e in got] == [b"onos"]
    ch.close()
    d2.close()


def test_capacity_refused_before_any_write(target) -> None:
    d = driver(target.address)
    s = SliceEntry(1, 1, "big", TENANT_A.vni, TENANT_A.vlan, (0,))
    rules = tuple(Rule(Match(dst_port=Ternary.exact(p, 16)), Action(1, 0, 0)) for p in range(4097))
    ir = RuleIR(lanes=8, paths=1, rules=rules, slices=(s,), tenants=(TENANT_A,))
    with pytest.raises(CapacityError) as err:
        d.lower(ir)
    assert err.value.needed == 4097 and err.value.available == 4096
    with pytest.raises(GeometryError):
        d.lower(RuleIR(lanes=4, paths=1, rules=()))
    assert not any(d.read_state().tables.values())
    d.close()


def test_injected_mid_push_failure_rolls_back(start_target) -> None:
    # Write RPC 1 = the first push (one batch of up to 10), the second push fails on its 3rd batch.
    t = start_target("--priority-queues", "8", "--fail-write", "4")
    d = driver(t.address, batch_size=10)
    first = two_tenants()
    d.apply(d.lower(first), lambda e: None)  # 30 updates -> writes 1..3 (no register resets)
    before = d.read_state().tables
    bigger_rules = first.rules + tuple(
        Rule(Match(src_ip=Ternary.exact(ip("10.9.0.0") + i, 32)), Action(3, 1, 0)) for i in range(40)
    )
    bigger = RuleIR(lanes=8, paths=1, rules=bigger_rules, slices=first.slices, tenants=first.tenants)
    seen, cb = events()
    with pytest.raises(PushError) as err:
        d.apply(d.lower(bigger), cb)
    assert err.value.rolled_back
    assert d.read_state().tables == before
    assert any(e.phase == "rollback" for e in seen)
    d.close()


def test_reconcile_after_target_restart_reads_back_empty(start_target) -> None:
    t = start_target("--priority-queues", "8")
    d = driver(t.address)
    d.apply(d.lower(two_tenants()), lambda e: None)
    assert d.read_state().version is not None
    t.stop()
    with pytest.raises(UnreachableError):
        d.read_state()
    d.close()
    t2 = start_target("--priority-queues", "8")
    d2 = driver(t2.address)
    state = d2.read_state()
    assert state.version is None and not any(state.tables.values())
    d2.close()


def test_unreachable_and_bad_options_are_typed_errors() -> None:
    with pytest.raises(UnreachableError):
        driver("127.0.0.1:1", timeout_s=0.5).read_state()
    from sliceportal.drivers.contract import DriverError

    with pytest.raises(DriverError):
        P4rtDriver({"qos_mode": "bogus"})
    assert TENANT_B.vlan == 200


def test_a_push_after_a_drift_seen_by_read_back_repairs_it(target) -> None:
    """The driver diffs against what it last wrote, not a read-back; a read-back (the
    reconciler's, the push framework's before each push) that finds the switch changed is
    what it diffs against next: a hand-deleted entry of ours is written again."""
    d = driver(target.address)
    plan = d.lower(two_tenants())
    d.apply(plan, lambda e: None)
    ours = next(e for e in plan.tables[CLASSIFIER] if not e.get("default"))
    # another controller deletes one of our entries: primary while it writes, so its election
    # id is above the one our driver took to write (client.WRITE_FLOOR and up)
    ch = grpc.insecure_channel(target.address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    arb = p4runtime_pb2.StreamMessageRequest()
    arb.arbitration.device_id = 1
    arb.arbitration.election_id.high = 99
    hold = threading.Event()

    def requests():
        yield arb
        hold.wait(10)

    stream = stub.StreamChannel(requests())
    assert next(stream).arbitration.status.code == 0
    w = p4runtime_pb2.WriteRequest(device_id=1)
    w.election_id.high = 99
    w.updates.add(type=p4runtime_pb2.Update.DELETE).entity.table_entry.CopyFrom(
        d.codec.update(p4runtime_pb2.Update.DELETE, CLASSIFIER, ours).entity.table_entry
    )
    stub.Write(w)
    hold.set()
    stream.cancel()
    ch.close()
    state = d.read_state()  # the drift is seen ...
    assert ours not in state.tables[CLASSIFIER]
    again = d.apply(plan, lambda e: None)  # ... and the next push repairs exactly it
    assert (again.added, again.removed, again.modified) == (1, 0, 0)
    assert d.read_state().tables == plan.tables
    d.close()


def _reads(d: P4rtDriver) -> list[object]:
    """The Read RPCs the driver's session sends from now on (a spy on its ``read``)."""
    s = d._connect()
    sent: list[object] = []
    read = s.read

    def counted(request: object) -> object:
        sent.append(request)
        return read(request)

    s.read = counted  # type: ignore[method-assign,assignment]
    return sent


def test_prefetch_reads_what_lowering_keeps_once(target) -> None:
    """contract.LoweringPrefetcher: a connected driver that holds nothing reads the switch when
    asked, and its next lowering reads nothing; once it holds the tables, prefetch reads nothing."""
    first = driver(target.address)
    plan = first.lower(two_tenants())
    first.apply(plan, lambda e: None)
    first.close()
    d = driver(target.address)  # a fresh process's driver: the switch holds what another pushed
    d._connect()
    reads = _reads(d)
    d.prefetch()
    assert len(reads) == 1
    again = d.lower(two_tenants())
    assert len(reads) == 1  # lowering found the priorities it keeps in what prefetch read
    assert again.tables == plan.tables
    d.prefetch()
    assert len(reads) == 1
    d.close()
