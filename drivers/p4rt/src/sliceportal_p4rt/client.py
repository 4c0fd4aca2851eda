"""A P4Runtime session: the stream channel held open for arbitration, batched writes with
per-update errors decoded, and reads."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator, Sequence
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from sliceportal.drivers.contract import DriverError, UnreachableError

from .wire import varint


@dataclass
class UpdateError:
    index: int
    code: int
    message: str


class WriteFailed(Exception):
    """A Write RPC failed: ``errors`` per failed update (empty when the whole RPC failed)."""

    def __init__(self, code: grpc.StatusCode, message: str, errors: list[UpdateError]) -> None:
        super().__init__(f"{code.name}: {message}")
        self.code, self.message, self.errors = code, message, errors


class WriteCall:
    """A Write RPC under way."""

    def __init__(self, future: grpc.Future) -> None:
        self._future = future

    def result(self) -> None:
        try:
            self._future.result()
        except grpc.RpcError as e:
            raise WriteFailed(e.code(), e.details() or "", _update_errors(e)) from None


class Session:
    def __init__(self, address: str, device_id: int, election_id: int, timeout_s: float = 10.0) -> None:
        self.device_id, self.election_id, self.timeout = device_id, election_id, timeout_s
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._outbox: queue.Queue[p4runtime_pb2.StreamMessageRequest | None] = queue.Queue()
        self._arbitration: queue.Queue[p4runtime_pb2.MasterArbitrationUpdate | Exception] = queue.Queue()
        try:
            grpc.channel_ready_future(self.channel).result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            self.channel.close()
            raise UnreachableError(
                f"no P4Runtime server answers at {address}",
                hint="start the switch (simple_switch_grpc or the bundled target)",
            ) from None
        # Primary since our arbitration was answered OK and until the stream ends or tells of
        # another primary: while it holds, no one else wrote to the switch (PI arbitration).
        self._elected = self._lost = False
        self._write = self.channel.unary_unary(
            "/p4.v1.P4Runtime/Write",
            request_serializer=None,  # bytes as they are: see write()
            response_deserializer=p4runtime_pb2.WriteResponse.FromString,
        )
        self._stream = self.stub.StreamChannel(self._requests())
        threading.Thread(target=self._responses, daemon=True).start()
        self._outbox.put(self._arbitration_request())
        try:
            reply = self._arbitration.get(timeout=timeout_s)
        except queue.Empty:
            self.close()
            raise UnreachableError(f"{address} did not answer the arbitration request") from None
        if isinstance(reply, Exception):
            self.close()
            raise UnreachableError(f"stream channel to {address} failed: {reply}")
        if reply.status.code != code_pb2.OK:
            self.close()
            raise DriverError(
                f"not the primary controller of device {device_id}: {reply.status.message}",
                hint="another controller holds a higher election id; raise 'election_id'",
            )

    def _arbitration_request(self) -> p4runtime_pb2.StreamMessageRequest:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        req.arbitration.election_id.high = self.election_id >> 64
        req.arbitration.election_id.low = self.election_id & ((1 << 64) - 1)
        return req

    def _requests(self) -> Iterator[p4runtime_pb2.StreamMessageRequest]:
        while True:
            msg = self._outbox.get()
            if msg is None:
                return
            yield msg

    def _responses(self) -> None:
        try:
            for resp in self._stream:
                if resp.HasField("arbitration"):
                    if resp.arbitration.status.code == code_pb2.OK:
                        self._elected = True
                    elif self._elected:
                        self._lost = True  # another controller became primary
                    self._arbitration.put(resp.arbitration)
        except grpc.RpcError as e:
            self._arbitration.put(e)
        finally:
            self._lost = True

    @property
    def primary(self) -> bool:
        """The stream is up and we have been the primary controller since it opened: what
        the switch holds changed only through this session's writes."""
        return self._elected and not self._lost

    def close(self) -> None:
        self._lost = True
        self._outbox.put(None)
        self.channel.close()

    def _election(self, msg: p4runtime_pb2.Uint128) -> None:
        msg.high, msg.low = self.election_id >> 64, self.election_id & ((1 << 64) - 1)

    # ---- pipeline ---------------------------------------------------------------------

    def get_p4info(self) -> p4info_pb2.P4Info | None:
        req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.P4INFO_AND_COOKIE,
        )
        try:
            resp = self.stub.GetForwardingPipelineConfig(req, timeout=self.timeout)
        except grpc.RpcError as e:
            if e.code() == grpc.StatusCode.FAILED_PRECONDITION:
                return None
            raise
        return resp.config.p4info if resp.config.HasField("p4info") else None

    def set_pipeline(self, p4info: p4info_pb2.P4Info, device_config: bytes, cookie: int) -> None:
        req = p4runtime_pb2.SetForwardingPipelineConfigRequest(
            device_id=self.device_id,
            action=p4runtime_pb2.SetForwardingPipelineConfigRequest.VERIFY_AND_COMMIT,
        )
        self._election(req.election_id)
        req.config.p4info.CopyFrom(p4info)
        req.config.p4_device_config = device_config
        req.config.cookie.cookie = cookie
        self.stub.SetForwardingPipelineConfig(req, timeout=self.timeout)

    # ---- write / read -----------------------------------------------------------------

    def write(self, updates: Sequence[p4runtime_pb2.Update | bytes]) -> None:
        """One Write RPC of ``updates`` (messages, or their serialized bytes).

        The request is sent as bytes: the header serialized once, then each update as its
        own serialized piece. Building ``WriteRequest(updates=...)`` would deep-copy every
        update, which with the pure-Python protobuf runtime that p4runtime's generated code
        needs (protobuf 3.20) cost more than the switch's own work.
        """
        head = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._election(head.election_id)
        try:
            self._write(write_request_bytes(head, updates), timeout=self.timeout)
        except grpc.RpcError as e:
            raise WriteFailed(e.code(), e.details() or "", _update_errors(e)) from None

    def write_async(self, updates: Sequence[p4runtime_pb2.Update | bytes]) -> WriteCall:
        """``write`` sent without waiting: ``.result()`` on the answer waits and raises WriteFailed."""
        head = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._election(head.election_id)
        return WriteCall(self._write.future(write_request_bytes(head, updates), timeout=self.timeout))

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities)
        out: list[p4runtime_pb2.Entity] = []
        for resp in self.stub.Read(req, timeout=self.timeout):
            out.extend(resp.entities)
        return out


def write_request_bytes(head: p4runtime_pb2.WriteRequest, updates: Sequence[p4runtime_pb2.Update | bytes]) -> bytes:
    """The serialized WriteRequest ``head`` with ``updates`` appended to its ``updates`` field:
    protobuf parses concatenated pieces as one message, repeated fields in order."""
    head_bytes: bytes = head.SerializeToString()
    return head_bytes + b"".join(
        _UPDATES_TAG + varint(len(b)) + b
        for b in (u if isinstance(u, bytes) else u.SerializeToString() for u in updates)
    )


_UPDATES_TAG = varint(p4runtime_pb2.WriteRequest.DESCRIPTOR.fields_by_name["updates"].number << 3 | 2)


def _update_errors(e: grpc.RpcError) -> list[UpdateError]:
    """The p4.v1.Error list PI puts in grpc-status-details-bin for a failed batch."""
    for key, value in e.trailing_metadata() or ():
        if key == "grpc-status-details-bin":
            status = status_pb2.Status.FromString(value)
            out = []
            for i, detail in enumerate(status.details):
                err = p4runtime_pb2.Error()
                detail.Unpack(err)
                if err.canonical_code != code_pb2.OK:
                    out.append(UpdateError(i, err.canonical_code, err.message))
            return out
    return []
