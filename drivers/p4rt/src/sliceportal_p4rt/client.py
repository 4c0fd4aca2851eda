"""A P4Runtime session: the stream channel held open for arbitration, batched writes with
per-update errors decoded, and reads."""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import functools
import os
import secrets
import threading
from collections.abc import Sequence
from dataclasses import dataclass

import grpc
from google.rpc import code_pb2, status_pb2
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from sliceportal.drivers.contract import DriverError, UnreachableError

from .tls import Tls, open_aio_channel, open_channel
from .wire import update_field


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


# A failed Write answers one p4.v1.Error per update in its trailing metadata (PI's form): ~35
# bytes per update that succeeded, ~100 per failure, so a batch of a few hundred passes gRPC's
# default limits (8 KiB soft, 16 KiB hard) and the client got RESOURCE_EXHAUSTED instead of the
# errors. Room for a batch of 100 000 failures.
_METADATA_LIMIT = 16 << 20
CHANNEL_OPTIONS = [("grpc.max_metadata_size", _METADATA_LIMIT), ("grpc.absolute_max_metadata_size", _METADATA_LIMIT)]

# Election ids a portal process takes to write: every join stays below, so a process that
# joins (to read, or before its first write) never preempts one that is writing.
WRITE_FLOOR = 1 << 64
_JITTER = 1 << 32  # two bids derived from the same primary differ (PI ends a colliding stream)


class ElectionIdInUse(DriverError):
    """Another controller of the device joined with this election id (PI ends the stream)."""


def writer_bid(primary_id: int) -> int:
    """The election id a writer bids to take the primary role from ``primary_id``: above it and
    at least a writer's, plus a random step (also what ``sliceportal p4rt shell --write`` bids)."""
    return max(primary_id + 1, WRITE_FLOOR) + secrets.randbelow(_JITTER)


def _uint128(value: int, msg: p4runtime_pb2.Uint128) -> None:
    msg.high, msg.low = value >> 64, value & ((1 << 64) - 1)


class _StreamLoop:
    """The event loop every session's stream channel runs on (grpc.aio), one thread for all.

    A stream read by a thread of its own through grpc's synchronous iterator wakes that thread
    ten times a second whether anything arrived or not (``grpc._common.wait`` polls with a
    0.1 s timeout, grpc issue 19464). A portal process keeps a session to every backend it
    drives: with 1 000 of them idle that was half a core and every other call slowed by the
    interpreter lock's hand-overs (``bench scale_backends``). Here an idle stream costs nothing.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            # a forked child inherits the loop but not its thread: it starts its own
            if self._loop is None or self._pid != os.getpid():
                loop = asyncio.new_event_loop()
                threading.Thread(target=loop.run_forever, name="p4rt-streams", daemon=True).start()
                self._loop, self._pid = loop, os.getpid()
            return self._loop


_STREAMS = _StreamLoop()


class Session:
    """One controller's stream to a device, joined as primary or as backup (both may read);
    ``ensure_primary`` makes it the primary before a write by outbidding the one there.

    Several portal processes each hold a session to the same switch; their writes to one
    backend are serialised by the backend's PostgreSQL lock, so the process holding it takes
    over the primary role for its push (P4Runtime §5: the highest election id is primary,
    and the switch tells every controller when the primary changes)."""

    def __init__(
        self, address: str, device_id: int, election_id: int, timeout_s: float = 10.0, tls: Tls | None = None
    ) -> None:
        self.device_id, self.election_id, self.timeout = device_id, election_id, timeout_s
        self.channel = open_channel(address, tls, CHANNEL_OPTIONS)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self._loop = _STREAMS.get()
        # created here, bound to the loop on its first use there (asyncio's queues bind lazily)
        self._outbox: asyncio.Queue[p4runtime_pb2.StreamMessageRequest | None] = asyncio.Queue()
        self._streaming: concurrent.futures.Future[None] | None = None
        self._task: asyncio.Task[None] | None = None  # the stream's, once it runs on the loop
        # What the switch last told this stream, under ``_state``: every arbitration message
        # carries the primary's election id, and OK when that is ours.
        self._state = threading.Condition()
        self._heard = 0
        self._status = code_pb2.UNKNOWN
        self._primary_id = 0
        self._is_primary = False
        self._ended: Exception | None = None
        # Bumped each time this session becomes primary: what it read or wrote in one term is
        # what the switch holds until the term ends (between two terms others may write).
        self.term = 0
        ready = grpc.channel_ready_future(self.channel)
        try:
            ready.result(timeout=timeout_s)
        except grpc.FutureTimeoutError:
            ready.cancel()  # its polling thread would fail on the closed channel
            handshake = _handshake_failure(self.channel, tls is not None)
            self.channel.close()
            if handshake is not None:
                raise UnreachableError(f"P4Runtime at {address}: {handshake}", hint=TLS_HINT) from None
            raise UnreachableError(
                f"no P4Runtime server answers at {address}",
                hint="start the switch (simple_switch_grpc or the bundled target)",
            ) from None
        self._write = self.channel.unary_unary(
            "/p4.v1.P4Runtime/Write",
            request_serializer=None,  # bytes as they are: see write()
            response_deserializer=p4runtime_pb2.WriteResponse.FromString,
        )
        self._streaming = asyncio.run_coroutine_threadsafe(self._stream(address, tls), self._loop)
        with self._state:
            self._send(self._arbitration_request())
            self._state.wait_for(lambda: self._heard or self._ended is not None, timeout=timeout_s)
            heard, ended, status = self._heard, self._ended, self._status
        if heard and status in (code_pb2.OK, code_pb2.ALREADY_EXISTS):
            return
        self.close()
        in_use = (heard and status == code_pb2.INVALID_ARGUMENT) or (
            isinstance(ended, grpc.RpcError) and ended.code() == grpc.StatusCode.INVALID_ARGUMENT
        )
        if in_use:
            raise ElectionIdInUse(f"election id {election_id} is in use at device {device_id}")
        if heard:  # e.g. NOT_FOUND: no such device
            raise DriverError(
                f"device {device_id} at {address} refused the arbitration: {code_pb2.Code.Name(status)}",
                hint="check 'device_id'",
            )
        if ended is None:
            raise UnreachableError(f"{address} did not answer the arbitration request")
        raise UnreachableError(f"stream channel to {address} failed: {_ended_words(ended)}")

    def _arbitration_request(self) -> p4runtime_pb2.StreamMessageRequest:
        req = p4runtime_pb2.StreamMessageRequest()
        req.arbitration.device_id = self.device_id
        _uint128(self.election_id, req.arbitration.election_id)
        return req

    def _send(self, msg: p4runtime_pb2.StreamMessageRequest | None) -> None:
        """Queue a message on the stream (None: half-close it), from any thread."""
        self._loop.call_soon_threadsafe(self._outbox.put_nowait, msg)

    async def _write_queued(self, call: grpc.aio.StreamStreamCall) -> None:
        # a task writing, not an async generator handed to grpc: one left suspended at exit
        # (a pooled session nobody closed) was finalised while grpc's consumer still ran it
        # a call that ended refuses writes: its end is the reader's to report (``_ended``)
        with contextlib.suppress(grpc.RpcError, asyncio.InvalidStateError):
            while (msg := await self._outbox.get()) is not None:
                await call.write(msg)
            await call.done_writing()

    async def _stream(self, address: str, tls: Tls | None) -> None:
        """The stream channel, on the shared loop: what the switch says of the arbitration is
        kept under ``_state``; its end (the switch's, an error, ``close``) is ``_ended``."""
        self._task = asyncio.current_task()
        ended: Exception = ConnectionError("the switch ended the stream")
        channel = open_aio_channel(address, tls, CHANNEL_OPTIONS)
        call = p4runtime_pb2_grpc.P4RuntimeStub(channel).StreamChannel()
        writer = asyncio.create_task(self._write_queued(call))
        try:
            async for resp in call:
                if resp.HasField("arbitration"):
                    arb = resp.arbitration
                    with self._state:
                        ours = arb.status.code == code_pb2.OK
                        if ours and not self._is_primary:
                            self.term += 1
                        self._is_primary, self._status = ours, arb.status.code
                        self._primary_id = arb.election_id.high << 64 | arb.election_id.low
                        self._heard += 1
                        self._state.notify_all()
        except grpc.RpcError as e:
            ended = e
        except asyncio.CancelledError:
            ended = ConnectionError("the session was closed")
        finally:
            with self._state:
                self._ended, self._is_primary = ended, False
                self._state.notify_all()
            writer.cancel()
            await channel.close()

    @property
    def alive(self) -> bool:
        """The stream is up: the switch still counts this session among its controllers."""
        return self._ended is None

    @property
    def primary_id(self) -> int:
        """The primary's election id as the switch last named it (this session's own if primary)."""
        with self._state:
            return self._primary_id

    @property
    def primary(self) -> bool:
        """The switch's last word to this stream was that it is primary, and the stream is up."""
        return self._is_primary and self._ended is None

    def ensure_primary(self) -> None:
        """Be the primary for the writes that follow. A session the switch calls primary and
        whose id is a writer's checks it with an empty Write (PI answers PERMISSION_DENIED to
        anyone else); otherwise it bids above the primary the switch last named -- ids grow
        from what the switch reports, never from a counter of this process -- and waits for
        the verdict. A writer of another process that outbid us in between wins the next
        round of the same: the backend's lock keeps two of them from racing for long."""
        if self.primary and self.election_id >= WRITE_FLOOR:
            try:
                self.write([])
                return
            except WriteFailed as e:
                if e.code != grpc.StatusCode.PERMISSION_DENIED:
                    raise
        for _ in range(3):
            with self._state:
                if self._ended is not None:
                    raise UnreachableError(f"the stream channel ended: {self._ended}")
                bid = writer_bid(self._primary_id)
                self.election_id = bid
                self._send(self._arbitration_request())
                self._state.wait_for(functools.partial(self._answered, bid), self.timeout)
                if self._is_primary and self._primary_id == bid and self._ended is None:
                    return
                if self._ended is None and self._primary_id < bid:
                    raise UnreachableError(f"device {self.device_id} did not answer the arbitration update")
        raise DriverError(
            f"could not become the primary controller of device {self.device_id}: outbid three times",
            hint="another controller keeps raising its election id",
        )

    def _answered(self, bid: int) -> bool:
        """The switch has answered a bid of ``bid`` (or someone bid higher), or the stream ended."""
        return self._ended is not None or self._primary_id >= bid

    def close(self) -> None:
        with self._state:
            self._is_primary = False
        if self._streaming is not None:
            # ended, its channel closed, before this returns: a closed session holds no connection
            ending = asyncio.run_coroutine_threadsafe(self._end(), self._loop)
            with contextlib.suppress(concurrent.futures.TimeoutError):
                ending.result(timeout=self.timeout)
        self.channel.close()

    async def _end(self) -> None:
        # runs after the stream's first step (both were queued on the loop in that order)
        task = self._task
        if task is not None and not task.done():
            task.cancel()
            await asyncio.wait([task])

    def _election(self, msg: p4runtime_pb2.Uint128) -> None:
        _uint128(self.election_id, msg)

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

    def write_fields_async(self, fields: bytes) -> WriteCall:
        """``write_async`` of updates already framed and joined (``wire.update_field`` each):
        the push path's form, with no per-update step left here."""
        head = p4runtime_pb2.WriteRequest(device_id=self.device_id)
        self._election(head.election_id)
        return WriteCall(self._write.future(head.SerializeToString() + fields, timeout=self.timeout))

    def read(self, entities: Sequence[p4runtime_pb2.Entity]) -> list[p4runtime_pb2.Entity]:
        req = p4runtime_pb2.ReadRequest(device_id=self.device_id, entities=entities)
        out: list[p4runtime_pb2.Entity] = []
        for resp in self.stub.Read(req, timeout=self.timeout):
            out.extend(resp.entities)
        return out


TLS_HINT = (
    "set the transport to what the switch serves: tls_ca_cert (the CA of its certificate), tls_server_name "
    "(a name its certificate carries) and, with client authentication, tls_client_cert / "
    "tls_client_key_secret (docs/security.md)"
)


def _handshake_failure(channel: grpc.Channel, tls: bool) -> str | None:
    """Why a channel that never became ready failed, when the TLS handshake is the cause (from
    gRPC's own text, which names the local check that failed, e.g. CERTIFICATE_VERIFY_FAILED),
    else None: nothing listens, or the server is slow. A switch that refuses the client's
    certificate (or its absence) just closes the connection; so does a TLS switch to a
    plaintext client."""
    try:
        p4runtime_pb2_grpc.P4RuntimeStub(channel).Capabilities(p4runtime_pb2.CapabilitiesRequest(), timeout=1.0)
    except grpc.RpcError as e:
        if e.code() != grpc.StatusCode.UNAVAILABLE:
            return None
        last = (e.details() or "").rsplit("last error: ", 1)[-1]
        if tls and any(w in last.lower() for w in ("handshake", "verification")):
            # "UNKNOWN: ipv4:HOST:PORT: <what failed>": the address is in our message already
            return "the TLS handshake failed: " + last.split(": ", 2)[-1][:300]
        if "socket closed" in last.lower():
            return (
                (
                    "the switch closed the connection in the TLS handshake: it did not accept this client's "
                    "certificate (or its absence)"
                )
                if tls
                else ("the switch closed the connection: does it serve TLS (simple_switch_grpc --grpc-server-ssl)?")
            )
    return None


def read_once(
    address: str,
    device_id: int,
    entities: Sequence[p4runtime_pb2.Entity],
    timeout_s: float,
    tls: Tls | None = None,
) -> list[p4runtime_pb2.Entity]:
    """One Read without a session (P4Runtime lets any client read): fails at once with
    UNAVAILABLE when nothing listens (no wait for the channel), within ``timeout_s`` else."""
    with open_channel(address, tls) as channel:
        stub = p4runtime_pb2_grpc.P4RuntimeStub(channel)
        req = p4runtime_pb2.ReadRequest(device_id=device_id, entities=entities)
        return [e for resp in stub.Read(req, timeout=timeout_s) for e in resp.entities]


def write_request_bytes(head: p4runtime_pb2.WriteRequest, updates: Sequence[p4runtime_pb2.Update | bytes]) -> bytes:
    """The serialized WriteRequest ``head`` with ``updates`` appended to its ``updates`` field:
    protobuf parses concatenated pieces as one message, repeated fields in order."""
    head_bytes: bytes = head.SerializeToString()
    return head_bytes + b"".join(update_field(u if isinstance(u, bytes) else u.SerializeToString()) for u in updates)


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


def _ended_words(ended: object) -> str:
    """Why the stream channel of a peer not yet known to speak P4Runtime ended, in our words:
    gRPC's text quotes what the peer sent (an HTTP/1 server's status line), never shown (#27)."""
    if not isinstance(ended, grpc.RpcError):
        return type(ended).__name__
    details = (ended.details() or "").lower()
    if (
        "http1" in details
        or "http/1" in details
        or ended.code() in (grpc.StatusCode.UNIMPLEMENTED, grpc.StatusCode.INTERNAL)
    ):
        return "protocol mismatch: not a P4Runtime (gRPC) server"
    if ended.code() == grpc.StatusCode.DEADLINE_EXCEEDED:
        return "no answer in time"
    if ended.code() == grpc.StatusCode.UNAVAILABLE:
        return "connection refused or closed (UNAVAILABLE)"
    return f"ended with {ended.code().name}"
