"""Live ports (``--interface N@ifname``, AF_PACKET, needs root): one persistent traffic
manager per switch between the ingress pipeline and the egress ports.

A thread per port receives frames and runs the ingress pipeline (under the switch's lock,
as P4Runtime writes); the packet goes into its egress port's strict-priority queues;
the port's drain thread (``LiveTrafficManager``) runs the egress pipeline and sends at the
link rate in wall-clock time. So under overload the queues decide which lanes lose, as
on BMv2, instead of every lane losing alike in the kernel's socket buffers.

``/sliceportal.bmv2.Live/SetLinkRate`` (JSON ``{"link_rate_bps": n | null}``) changes the
egress link rate while traffic flows (the testbed's congestion scenario);
``/sliceportal.bmv2.Live/Status`` reports rate, drops and queue depths.
"""

from __future__ import annotations

import json
import socket
import threading
import time
from dataclasses import dataclass
from typing import Any

import grpc

from .packet_io import open_port, receive
from .pipeline import InFlight
from .switch import Switch
from .traffic_manager import LiveTrafficManager

SO_RCVBUFFORCE = 33  # socket.SO_RCVBUFFORCE where Python exposes it (Linux)
RCVBUF_BYTES = 8 << 20


@dataclass(slots=True)
class _Queued:
    """A packet between ingress and egress with the pipeline that ingressed it: a packet of
    a replaced pipeline (SetForwardingPipelineConfig meanwhile) is never egressed by the new
    one — its header layout belongs to the old program (BMv2 drops in-flight packets too)."""

    packet: InFlight
    pipeline: Any  # kept alive, compared by identity
    priority: int
    egress_port: int
    data: bytes


class LivePorts:
    def __init__(self, switch: Switch, spec: list[str]) -> None:
        self.switch = switch
        self.socks: dict[int, socket.socket] = {}
        for item in spec:
            port_text, _, ifname = item.partition("@")
            s = self.socks[int(port_text)] = open_port(ifname)
            # a deep receive buffer: while this process waits for a CPU (a loaded machine), frames
            # wait in the kernel instead of being dropped there, FIFO, before the priority queues
            try:
                s.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)
            except OSError:  # not root: as much as the system allows
                s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
        cfg = switch.config
        self.tm: LiveTrafficManager[_Queued] = LiveTrafficManager(
            cfg.priority_queues, cfg.queue_depth, cfg.link_bps, self._transmit
        )
        self.received = 0
        self.send_errors = 0
        self.stale_drops = 0

    def start(self) -> None:
        for port, s in self.socks.items():
            threading.Thread(target=self._pump, args=(port, s), daemon=True, name=f"rx-port{port}").start()

    def _pump(self, port: int, s: socket.socket) -> None:
        while True:
            data = receive(s)
            if data is None:
                continue
            with self.switch.lock:
                pipeline = self.switch.pipeline
                if pipeline is None:
                    continue
                f = pipeline.ingress(data, port, time.time_ns() // 1000)
                self.switch.processed += 1
            self.received += 1
            if f is not None:
                self.tm.enqueue(_Queued(f, pipeline, f.priority, f.egress_port, f.data))

    def _transmit(self, port: int, q: _Queued) -> None:
        f = q.packet
        with self.switch.lock:
            pipeline = self.switch.pipeline
            if pipeline is None or pipeline is not q.pipeline:  # a new pipeline config: in-flight packets are gone
                self.stale_drops += 1
                return
            try:  # the compiled engine: egress at the departure time; None = egress dropped it
                data = pipeline.egress(f, time.time_ns() // 1000)
            except TypeError:  # the Python pipeline it replaces: egress(f)
                data = pipeline.egress(f)
        dst = self.socks.get(port)
        if dst is None or data is None:
            return
        try:
            dst.send(data)
        except OSError:  # e.g. ENOBUFS on a full veth: the frame is lost on the wire
            self.send_errors += 1

    def status(self) -> dict[str, Any]:
        return {
            "link_rate_bps": self.tm.link_bps,
            "priority_queues": self.tm.priority_queues,
            "queue_depth": self.tm.queue_depth,
            "received": self.received,
            "transmitted": self.tm.transmitted,
            "drops_queue_full": self.tm.drops_queue_full,
            "drops_out_of_range": self.tm.drops_out_of_range,
            "send_errors": self.send_errors,
            "stale_drops": self.stale_drops,
            "queued": {str(p): d for p, d in self.tm.depths().items()},
        }

    # ---- control (gRPC, JSON bodies as the Dataplane service) ----------------------------

    def _set_link_rate(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            rate = json.loads(request)["link_rate_bps"]
            if rate is not None and (not isinstance(rate, int) or rate <= 0):
                raise ValueError("link_rate_bps must be a positive integer or null")
        except (ValueError, KeyError, TypeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad SetLinkRate request: {e}")
        self.tm.set_link_bps(rate)
        return json.dumps(self.status()).encode()

    def _status(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        return json.dumps(self.status()).encode()

    def handler(self) -> grpc.GenericRpcHandler:
        return grpc.method_handlers_generic_handler(
            "sliceportal.bmv2.Live",
            {
                "SetLinkRate": grpc.unary_unary_rpc_method_handler(self._set_link_rate),
                "Status": grpc.unary_unary_rpc_method_handler(self._status),
            },
        )


def call_live(address: str, method: str, body: dict[str, Any] | None = None, timeout_s: float = 5.0) -> dict[str, Any]:
    """Client of the Live service (the testbed's congestion scenario): ``method`` is
    SetLinkRate or Status; returns the target's status."""
    with grpc.insecure_channel(address) as channel:
        call = channel.unary_unary(f"/sliceportal.bmv2.Live/{method}")
        reply: bytes = call(json.dumps(body or {}).encode(), timeout=timeout_s)
    result: dict[str, Any] = json.loads(reply)
    return result
