"""The P4Runtime gRPC service of the bundled target (p4.v1.P4Runtime), plus a small
``sliceportal.bmv2.Dataplane`` service that replays pcaps through the pipeline.

Arbitration follows the P4Runtime spec as PI implements it: the stream with the highest
election id is primary and alone may write; every Write / SetForwardingPipelineConfig
from anyone else is PERMISSION_DENIED. A stream may change its election id (a backup
outbids the primary); an id another stream holds ends the stream INVALID_ARGUMENT, and an
unchanged one is not answered. Writes are CONTINUE_ON_ERROR (PI's only mode);
a batch with failures answers UNKNOWN with one p4.v1.Error per update in the details.
"""

from __future__ import annotations

import json
import os
import queue
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import grpc
from google.protobuf import text_format  # type: ignore[import-untyped]
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from .errors import P4RTError, invalid, not_found
from .p4info_index import P4InfoIndex
from .switch import Switch
from .tables import encode

Update = p4runtime_pb2.Update
# a stream's outbox: messages, an error that ends the stream, None that ends it OK
Outbox = queue.Queue[p4runtime_pb2.StreamMessageResponse | P4RTError | None]


@dataclass
class Faults:
    """Fault injection for framework tests: which Write RPC (1-based, empty ones not counted) misbehaves."""

    fail_write: int = 0  # answer UNAVAILABLE without applying anything
    exit_on_write: int = 0  # the process dies on receiving it (a switch crash mid-push)
    writes_seen: int = 0


@dataclass
class Arbitration:
    device_id: int
    lock: threading.Lock = field(default_factory=threading.Lock)
    streams: dict[int, tuple[int, Outbox]] = field(default_factory=dict)  # stream key -> (election id, outbox)

    def primary(self) -> int | None:
        with self.lock:
            return self.primary_locked()

    def primary_locked(self) -> int | None:
        return max((e for e, _ in self.streams.values()), default=None)


def _election(msg: p4runtime_pb2.Uint128) -> int:
    return int((msg.high << 64) | msg.low)


class P4RuntimeServicer(p4runtime_pb2_grpc.P4RuntimeServicer):  # type: ignore[misc]
    def __init__(self, switch: Switch, device_id: int, faults: Faults) -> None:
        self.switch = switch
        self.arb = Arbitration(device_id)
        self.faults = faults
        self.cookie = 0
        self.device_config = b""

    # ---- arbitration ------------------------------------------------------------------

    def StreamChannel(
        self, request_iterator: Iterator[p4runtime_pb2.StreamMessageRequest], context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.StreamMessageResponse]:
        outbox: Outbox = queue.Queue()
        key = id(outbox)

        def reader() -> None:
            try:
                for req in request_iterator:
                    if req.HasField("arbitration"):
                        self._arbitrate(key, req.arbitration, outbox)
            except grpc.RpcError:
                pass
            finally:
                with self.arb.lock:
                    before = self.arb.primary_locked()
                    self.arb.streams.pop(key, None)
                    self._announce_if_changed(before, skip=key)
                outbox.put(None)

        threading.Thread(target=reader, daemon=True).start()
        while True:
            msg = outbox.get()
            if msg is None:
                return
            if isinstance(msg, P4RTError):
                context.abort(msg.code, msg.message)
            yield msg

    def _arbitrate(self, key: int, arb: p4runtime_pb2.MasterArbitrationUpdate, outbox: Outbox) -> None:
        """A stream joins, or changes its election id, as PI's arbitration does: the one
        whose own role changed (it became primary, or stopped being it) makes everyone hear
        of the new primary; otherwise only the stream that asked is answered."""
        if arb.device_id != self.arb.device_id:
            resp = p4runtime_pb2.StreamMessageResponse()
            resp.arbitration.CopyFrom(arb)
            resp.arbitration.status.code = code_pb2.NOT_FOUND
            resp.arbitration.status.message = f"unknown device id {arb.device_id}"
            outbox.put(resp)
            return
        election = _election(arb.election_id)
        with self.arb.lock:
            old = self.arb.streams.get(key)
            if old is not None and old[0] == election:
                return
            before = self.arb.primary_locked()
            if any(e == election and k != key for k, (e, _) in self.arb.streams.items()):
                # PI ends the stream (and forgets its old id: the others hear of that)
                self.arb.streams.pop(key, None)
                self._announce_if_changed(before, skip=key)
                outbox.put(invalid("Election id already exists" if old is None else "New election id already exists"))
                return
            was_primary = old is not None and old[0] == before
            self.arb.streams[key] = (election, outbox)
            is_primary = election == self.arb.primary_locked()
            changed = is_primary if old is None else is_primary != was_primary
            for k, (e, box) in self.arb.streams.items():
                if k == key or changed:
                    box.put(self._announcement(e))

    def _announcement(self, election: int) -> p4runtime_pb2.StreamMessageResponse:
        """Who is primary, as told to the stream holding ``election`` (P4Runtime spec §5: OK
        to the primary, ALREADY_EXISTS to a backup; the primary's id either way)."""
        primary = self.arb.primary_locked()
        assert primary is not None
        msg = p4runtime_pb2.StreamMessageResponse()
        msg.arbitration.device_id = self.arb.device_id
        msg.arbitration.election_id.high, msg.arbitration.election_id.low = primary >> 64, primary & ((1 << 64) - 1)
        ours = election == primary
        msg.arbitration.status.code = code_pb2.OK if ours else code_pb2.ALREADY_EXISTS
        msg.arbitration.status.message = "Is primary" if ours else "Is backup"
        return msg

    def _announce_if_changed(self, before: int | None, skip: int) -> None:
        """When the primary changes, every other controller of the device is told who is
        primary now, as BMv2's PI does: a former primary learns that someone else may have
        written meanwhile. Called under ``arb.lock`` so that announcements follow the order
        of changes."""
        primary = self.arb.primary_locked()
        if primary is None or primary == before:
            return
        for k, (election, box) in self.arb.streams.items():
            if k != skip:
                box.put(self._announcement(election))

    def _check_primary(self, device_id: int, election_id: p4runtime_pb2.Uint128 | int) -> None:
        if device_id != self.arb.device_id:
            raise not_found(f"unknown device id {device_id}")
        primary = self.arb.primary()
        election = election_id if isinstance(election_id, int) else _election(election_id)
        if primary is None or election != primary:
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, "not the primary controller")

    # ---- pipeline config ----------------------------------------------------------------

    def SetForwardingPipelineConfig(
        self, request: p4runtime_pb2.SetForwardingPipelineConfigRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.SetForwardingPipelineConfigResponse:
        try:
            self._check_primary(request.device_id, request.election_id)
            A = p4runtime_pb2.SetForwardingPipelineConfigRequest
            if request.action not in (
                A.VERIFY,
                A.VERIFY_AND_SAVE,
                A.VERIFY_AND_COMMIT,
                A.COMMIT,
                A.RECONCILE_AND_COMMIT,
            ):
                raise invalid("unspecified action")
            if request.action == A.COMMIT:
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            index = P4InfoIndex.of(request.config.p4info)
            if request.action == A.VERIFY:
                Switch(self.switch.config).load(index, request.config.p4_device_config)
                return p4runtime_pb2.SetForwardingPipelineConfigResponse()
            self.switch.load(index, request.config.p4_device_config)
            self.cookie = request.config.cookie.cookie
            self.device_config = request.config.p4_device_config
        except P4RTError as e:
            context.abort(e.code, e.message)
        return p4runtime_pb2.SetForwardingPipelineConfigResponse()

    def GetForwardingPipelineConfig(
        self, request: p4runtime_pb2.GetForwardingPipelineConfigRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.GetForwardingPipelineConfigResponse:
        resp = p4runtime_pb2.GetForwardingPipelineConfigResponse()
        if self.switch.index is None:
            context.abort(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
        R = p4runtime_pb2.GetForwardingPipelineConfigRequest
        if request.response_type in (R.ALL, R.P4INFO_AND_COOKIE):
            resp.config.p4info.CopyFrom(self.switch.index.info)  # type: ignore[union-attr]
        if request.response_type in (R.ALL, R.DEVICE_CONFIG_AND_COOKIE):
            resp.config.p4_device_config = self.device_config
        resp.config.cookie.cookie = self.cookie
        return resp

    def Capabilities(
        self, request: p4runtime_pb2.CapabilitiesRequest, context: grpc.ServicerContext
    ) -> p4runtime_pb2.CapabilitiesResponse:
        return p4runtime_pb2.CapabilitiesResponse(p4runtime_api_version="1.3.0")

    # ---- write --------------------------------------------------------------------------

    def add_to_server(self, server: grpc.Server) -> None:
        """Serve P4Runtime on ``server``: the generated servicer's methods, then ``Write`` with
        the request left undecoded (``write_raw``) in place of its own. Registered, not a
        generic handler before it: the generated code (grpcio-tools >= 1.63) registers every
        method, and a registered method is served before any generic handler, so the raw
        Write was never reached (from 2026-11-27 every write went through protobuf and
        ``_apply``, a quarter of the rate; tests/test_write_path.py)."""
        p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(self, server)
        raw = grpc.unary_unary_rpc_method_handler(self.write_raw, request_deserializer=None, response_serializer=None)
        server.add_registered_method_handlers("p4.v1.P4Runtime", {"Write": raw})  # replaces the generated one

    def write_raw(self, raw: bytes, context: grpc.ServicerContext) -> bytes:
        """Write, decoded by the engine: it splits the request and applies each valid
        table-entry update itself; only the other updates (and every invalid one, so that
        the error codes come from one validator) go through protobuf and ``_apply``. The
        pure-Python protobuf that p4runtime's generated code needs decodes ~0.4 ms/update."""
        split = None
        with self.switch.lock:  # the engine is borrowed by one caller at a time (PyO3)
            engine = self.switch.pipeline
            if engine is not None:
                try:
                    split = engine.split_write(raw)
                except ValueError:
                    split = None
        if split is None:  # no pipeline yet, or bytes only protobuf can judge
            return bytes(self.Write(p4runtime_pb2.WriteRequest.FromString(raw), context).SerializeToString())
        device_id, election, atomicity, n = split
        try:
            self._check_primary(device_id, election)  # an int: no pure-Python protobuf message per Write
            if atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, "only CONTINUE_ON_ERROR is supported")
        except P4RTError as err:
            context.abort(err.code, err.message)
        self._count_write(context, n)
        failed: dict[int, p4runtime_pb2.Error] = {}  # update index -> its error (most batches: none)
        with self.switch.lock:
            engine = self.switch.pipeline  # the pipeline cannot change while the lock is held
            assert engine is not None and self.switch.tables is not None
            i = 0
            while i < n:
                j = engine.fast_updates(raw, i)  # the engine applies [i, j) in order
                if j < n:  # update j is not a plain valid entry write: the full path decides
                    try:
                        self._apply(Update.FromString(engine.write_update(raw, j)))
                    except P4RTError as err:
                        failed[j] = p4runtime_pb2.Error(canonical_code=err.code.value[0], message=err.message)
                i = j + 1
            self.switch.tables.commit()
        if failed:
            ok = p4runtime_pb2.Error(canonical_code=code_pb2.OK)
            self._report([failed.get(k, ok) for k in range(n)], context)
        return b""  # an empty WriteResponse

    def _count_write(self, context: grpc.ServicerContext, updates: int) -> None:
        if not updates:
            return  # an empty Write (a controller checking it is primary) writes nothing
        self.faults.writes_seen += 1
        if self.faults.exit_on_write and self.faults.writes_seen == self.faults.exit_on_write:
            os._exit(17)
        if self.faults.fail_write and self.faults.writes_seen == self.faults.fail_write:
            context.abort(grpc.StatusCode.UNAVAILABLE, "injected failure")

    def _report(self, errors: list[p4runtime_pb2.Error], context: grpc.ServicerContext) -> None:
        """A batch with failures: UNKNOWN, one p4.v1.Error per update in the details (PI)."""
        failed = [e for e in errors if e.canonical_code != code_pb2.OK]
        if failed:
            status = status_pb2.Status(code=code_pb2.UNKNOWN, message=f"{len(failed)} update(s) failed")
            for e in errors:
                status.details.add().Pack(e)
            context.set_trailing_metadata((("grpc-status-details-bin", status.SerializeToString()),))
            context.set_code(grpc.StatusCode.UNKNOWN)
            context.set_details(status.message + ": " + failed[0].message)

    def Write(self, request: p4runtime_pb2.WriteRequest, context: grpc.ServicerContext) -> p4runtime_pb2.WriteResponse:
        try:
            self._check_primary(request.device_id, request.election_id)
            if self.switch.tables is None:
                raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
            if request.atomicity != p4runtime_pb2.WriteRequest.CONTINUE_ON_ERROR:
                raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, "only CONTINUE_ON_ERROR is supported")
        except P4RTError as err:
            context.abort(err.code, err.message)
        self._count_write(context, len(request.updates))
        errors: list[p4runtime_pb2.Error] = []
        with self.switch.lock:
            for update in request.updates:
                try:
                    self._apply(update)
                    errors.append(p4runtime_pb2.Error(canonical_code=code_pb2.OK))
                except P4RTError as err:
                    errors.append(p4runtime_pb2.Error(canonical_code=err.code.value[0], message=err.message))
            assert self.switch.tables is not None
            self.switch.tables.commit()
        self._report(errors, context)
        return p4runtime_pb2.WriteResponse()

    def _apply(self, update: p4runtime_pb2.Update) -> None:
        assert self.switch.tables is not None and self.switch.ext is not None
        ent = update.entity
        which = ent.WhichOneof("entity")
        if which == "table_entry":
            self.switch.tables.write(update.type, ent.table_entry)
            return
        if which == "action_profile_member":
            self.switch.tables.profiles.write_member(update.type, ent.action_profile_member)
            return
        if which == "action_profile_group":
            self.switch.tables.profiles.write_group(update.type, ent.action_profile_group)
            return
        if update.type != Update.MODIFY:
            raise invalid(f"{which} can only be modified")
        index = self.switch.index
        ext = self.switch.ext
        assert index is not None
        if which == "register_entry":
            # PI, which simple_switch_grpc serves P4Runtime through, has no register writes.
            raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, "Register writes are not supported yet")
        elif which == "counter_entry":
            c = ent.counter_entry
            if c.counter_id not in index.counters:
                raise not_found(f"unknown counter id {c.counter_id}")
            size = len(ext.counter_cells(c.counter_id))
            for i in self._indices(c, size):
                ext.set_counter(c.counter_id, i, c.data.packet_count, c.data.byte_count)
        elif which == "meter_entry":
            m = ent.meter_entry
            if m.meter_id not in index.meters:
                raise invalid(f"unknown meter id {m.meter_id}")
            if m.HasField("index") and not 0 <= m.index.index < ext.meter_size(m.meter_id):
                # PI answers a meter write past the array with UNKNOWN, not OUT_OF_RANGE.
                raise P4RTError(grpc.StatusCode.UNKNOWN, f"meter index {m.index.index} out of range")
            cfg = m.config
            if cfg.cir > cfg.pir:
                raise invalid("meter cir must not exceed pir")
            config = (cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) if m.HasField("config") else None
            for i in self._indices(m, ext.meter_size(m.meter_id)):
                ext.set_meter(m.meter_id, i, config)
        elif which == "direct_meter_entry":
            self._write_direct_meter(ent.direct_meter_entry)
        elif which == "direct_counter_entry":
            d = ent.direct_counter_entry
            hits = self.switch.tables.read(d.table_entry)
            if not hits or hits[0][1] is None:
                # PI: INVALID_ARGUMENT ("Cannot map table entry to handle"), not NOT_FOUND
                raise invalid("no such entry for the direct counter")
            self.switch.tables.set_counter(hits[0][0], hits[0][1], d.data.packet_count, d.data.byte_count)
        else:
            raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, f"{which} writes are not supported")

    def _direct_meter_table(self, te: p4runtime_pb2.TableEntry) -> Any:
        """The table of a DirectMeterEntry's table entry, which must have a direct meter."""
        tables, index = self.switch.tables, self.switch.index
        assert tables is not None and index is not None
        table = tables.table(te.table_id)
        if not any(d.direct_table_id == te.table_id for d in index.direct_meters.values()):
            raise invalid(f"table {table.info.preamble.name} has no direct meters")
        return table

    def _write_direct_meter(self, d: p4runtime_pb2.DirectMeterEntry) -> None:
        """PI's order: the entry (INVALID_ARGUMENT when there is none), then the table's
        meter, then the rates."""
        tables = self.switch.tables
        assert tables is not None
        if not d.HasField("table_entry"):
            raise invalid("missing table_entry field in DirectMeterEntry")
        default = d.table_entry.is_default_action
        hits = tables.read(d.table_entry) if d.table_entry.match or default else []
        if not hits:
            raise invalid("cannot map table entry to handle")
        table, e = hits[0]
        self._direct_meter_table(d.table_entry)
        cfg = d.config
        if d.HasField("config") and cfg.cir > cfg.pir:
            raise invalid("meter cir must not exceed pir")
        if e is None:  # PI maps the default entry to a handle BMv2 has no meter for
            raise P4RTError(grpc.StatusCode.UNKNOWN, "error when writing direct meter spec (default entry)")
        config = (cfg.cir, cfg.cburst, cfg.pir, cfg.pburst) if d.HasField("config") else None
        tables.engine.set_direct_meter(table.engine_table, e.handle, config)

    @staticmethod
    def _indices(entry: Any, size: int) -> range:
        if not entry.HasField("index"):
            return range(size)
        i = entry.index.index
        if not 0 <= i < size:
            raise P4RTError(grpc.StatusCode.OUT_OF_RANGE, f"index {i} outside 0..{size - 1}")
        return range(i, i + 1)

    # ---- read ---------------------------------------------------------------------------

    def Read(
        self, request: p4runtime_pb2.ReadRequest, context: grpc.ServicerContext
    ) -> Iterator[p4runtime_pb2.ReadResponse]:
        try:
            if request.device_id != self.arb.device_id:
                raise not_found(f"unknown device id {request.device_id}")
            if self.switch.tables is None:
                raise P4RTError(grpc.StatusCode.FAILED_PRECONDITION, "no forwarding pipeline config set")
            with self.switch.lock:
                resp = p4runtime_pb2.ReadResponse()
                for ent in request.entities:
                    for out in self._read(ent):
                        resp.entities.append(out)
        except P4RTError as e:
            context.abort(e.code, e.message)
        yield resp

    def _read(self, ent: p4runtime_pb2.Entity) -> Iterator[p4runtime_pb2.Entity]:
        tables, ext, index = self.switch.tables, self.switch.ext, self.switch.index
        assert tables is not None and ext is not None and index is not None
        which = ent.WhichOneof("entity")
        if which == "table_entry":
            want_counter = ent.table_entry.HasField("counter_data")
            for table, e in tables.read(ent.table_entry):
                te = tables.default_proto(table) if e is None else tables.to_proto(table, e)
                if want_counter and e is not None and table.info.direct_resource_ids:
                    te.counter_data.packet_count, te.counter_data.byte_count = tables.counter(table, e)
                yield p4runtime_pb2.Entity(table_entry=te)
        elif which == "counter_entry":
            c = ent.counter_entry
            ids = [c.counter_id] if c.counter_id else list(index.counters)
            for cid in ids:
                if cid not in index.counters:
                    raise not_found(f"unknown counter id {cid}")
                cells = ext.counter_cells(cid)
                for i in self._indices(c, len(cells)):
                    out = p4runtime_pb2.Entity()
                    out.counter_entry.counter_id = cid
                    out.counter_entry.index.index = i
                    out.counter_entry.data.packet_count, out.counter_entry.data.byte_count = cells[i]
                    yield out
        elif which == "register_entry":
            r = ent.register_entry
            ids = [r.register_id] if r.register_id else list(index.registers)
            for rid in ids:
                if rid not in index.registers:
                    raise not_found(f"unknown register id {rid}")
                regs = ext.register_cells(rid)
                for i in self._indices(r, len(regs)):
                    out = p4runtime_pb2.Entity()
                    out.register_entry.register_id = rid
                    out.register_entry.index.index = i
                    out.register_entry.data.bitstring = encode(regs[i])
                    yield out
        elif which == "meter_entry":
            m = ent.meter_entry
            ids = [m.meter_id] if m.meter_id else list(index.meters)
            for mid in ids:
                if mid not in index.meters:
                    raise not_found(f"unknown meter id {mid}")
                for i in self._indices(m, ext.meter_size(mid)):
                    config = ext.meter_config(mid, i)
                    out = p4runtime_pb2.Entity()
                    out.meter_entry.meter_id = mid
                    out.meter_entry.index.index = i
                    if config is not None:
                        cfg = out.meter_entry.config
                        cfg.cir, cfg.cburst, cfg.pir, cfg.pburst = config
                    yield out
        elif which == "action_profile_member":
            yield from tables.profiles.read_members(ent.action_profile_member)
        elif which == "action_profile_group":
            yield from tables.profiles.read_groups(ent.action_profile_group)
        elif which == "direct_meter_entry":
            te = ent.direct_meter_entry.table_entry
            if not te.table_id:
                raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, "reading all direct meters of all tables")
            self._direct_meter_table(te)
            hits = tables.read(te)
            if te.match and not hits:
                raise invalid("cannot map table entry to handle")
            for table, e in hits:
                if e is None:  # as PI, which asks BMv2 for the default entry's meter
                    raise P4RTError(grpc.StatusCode.UNKNOWN, "error when reading meter from target (default entry)")
                out = p4runtime_pb2.Entity()
                # as PI answers: the entry's key, and the rates when they are configured
                full = tables.to_proto(table, e)
                key = out.direct_meter_entry.table_entry
                key.table_id, key.priority = full.table_id, full.priority
                key.match.extend(full.match)
                config = tables.engine.direct_meter(table.engine_table, e.handle)
                if config is not None:
                    c = out.direct_meter_entry.config
                    c.cir, c.cburst, c.pir, c.pburst = config
                yield out
        elif which == "direct_counter_entry":
            for table, e in tables.read(ent.direct_counter_entry.table_entry):
                if e is None or not table.info.direct_resource_ids:
                    continue
                out = p4runtime_pb2.Entity()
                # As PI answers: the entry's key (match + priority) only, no action or metadata.
                full = tables.to_proto(table, e)
                key = out.direct_counter_entry.table_entry
                key.table_id, key.priority = full.table_id, full.priority
                key.match.extend(full.match)
                (
                    out.direct_counter_entry.data.packet_count,
                    out.direct_counter_entry.data.byte_count,
                ) = tables.counter(table, e)
                yield out
        else:
            raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, f"reading {which} is not supported")


class DataplaneService:
    """``/sliceportal.bmv2.Dataplane/RunPcaps``: JSON {"inputs": {port: path}, "out_dir": dir}
    -> {"written": {port: n}, "processed": n}. Test and demo traffic without root."""

    def __init__(self, switch: Switch) -> None:
        self.switch = switch

    def run_pcaps(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            req = json.loads(request)
            inputs = {int(p): Path(f) for p, f in req["inputs"].items()}
            written = self.switch.run_pcaps(inputs, Path(req["out_dir"]))
        except (ValueError, KeyError, TypeError, OSError, RuntimeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad RunPcaps request: {e}")
        return json.dumps({"written": written, "processed": self.switch.processed}).encode()

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            "sliceportal.bmv2.Dataplane",
            {
                "RunPcaps": grpc.unary_unary_rpc_method_handler(
                    self.run_pcaps, request_deserializer=None, response_serializer=None
                ),
            },
        )


def load_p4info_text(path: Path) -> p4info_pb2.P4Info:
    return text_format.Parse(path.read_text(), p4info_pb2.P4Info())
