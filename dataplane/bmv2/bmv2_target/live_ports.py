"""Live ports (``--interface N@ifname``, AF_PACKET, needs root): the data path runs in the
compiled engine's native threads (``dataplane/bmv2/engine/src/live.rs``), this module keeps
the control.

Per port a thread takes frames in batches from a PACKET_MMAP receive ring (read in place,
no system call while frames keep coming) and runs the ingress pipeline;
the packet goes into its egress port's strict-priority queues; the port's drain thread runs
the egress pipeline and sends (``sendmmsg``) at the link rate in wall-clock time. So under
overload the queues decide which lanes lose, as on BMv2, instead of every lane losing alike
in the kernel's socket buffers. The GIL is never taken on that path: at ~50 kpps one Python
thread per port was the limit (issue #13: >= 5 x simple_switch_grpc).

``/sliceportal.bmv2.Live/SetLinkRate`` (JSON ``{"link_rate_bps": n | null}``) changes the
egress link rate while traffic flows (the testbed's congestion scenario);
``/sliceportal.bmv2.Live/Status`` reports rate, drops and queue depths.
"""

from __future__ import annotations

import json
from typing import Any, NamedTuple

import grpc

from .engine import Engine, Live
from .switch import Switch


class LivePorts:
    def __init__(self, switch: Switch, spec: list[str]) -> None:
        self.switch = switch
        ports: list[tuple[int, str]] = []
        for item in spec:
            port_text, _, ifname = item.partition("@")
            ports.append((int(port_text), ifname))
        cfg = switch.config
        self.live = Live(ports, cfg.priority_queues, cfg.queue_depth, cfg.link_bps, switch.lock.gate)
        # a new forwarding pipeline ingresses from then on; packets of the old one still
        # queued are dropped at departure (their header layout belongs to the old program)
        switch.on_load.append(self._pipeline_changed)
        self._pipeline_changed(switch.pipeline)

    def _pipeline_changed(self, engine: Engine | None) -> None:
        self.live.set_engine(engine)

    def start(self) -> None:
        self.live.start()

    def stop(self) -> None:
        self.live.stop()

    def status(self) -> dict[str, Any]:
        counters, depths = self.live.status()
        cfg = self.switch.config
        return {
            "link_rate_bps": self.live.link_bps,
            "priority_queues": cfg.priority_queues,
            "queue_depth": cfg.queue_depth,
            **counters,
            "queued": {str(port): d for port, d in depths},
        }

    # ---- control (gRPC, JSON bodies as the Dataplane service) ----------------------------

    def _set_link_rate(self, request: bytes, context: grpc.ServicerContext) -> bytes:
        try:
            rate = json.loads(request)["link_rate_bps"]
            if rate is not None and (not isinstance(rate, int) or rate <= 0):
                raise ValueError("link_rate_bps must be a positive integer or null")
        except (ValueError, KeyError, TypeError) as e:
            context.abort(grpc.StatusCode.INVALID_ARGUMENT, f"bad SetLinkRate request: {e}")
        self.live.set_link_bps(rate)
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


class ClientTls(NamedTuple):
    """PEM bytes of a TLS client: the CA of the server's certificate, and the client's
    certificate and key (a target with ``--grpc-server-with-client-auth`` wants both)."""

    ca_cert: bytes
    cert: bytes | None = None
    key: bytes | None = None


def call_live(
    address: str, method: str, body: dict[str, Any] | None = None, timeout_s: float = 5.0, tls: ClientTls | None = None
) -> dict[str, Any]:
    """Client of the Live service (the testbed's congestion scenario): ``method`` is
    SetLinkRate or Status; returns the target's status. ``tls`` for a target serving TLS."""
    channel = (
        grpc.insecure_channel(address)
        if tls is None
        else grpc.secure_channel(address, grpc.ssl_channel_credentials(tls.ca_cert, tls.key, tls.cert))
    )
    with channel:
        call = channel.unary_unary(f"/sliceportal.bmv2.Live/{method}")
        reply: bytes = call(json.dumps(body or {}).encode(), timeout=timeout_s)
    result: dict[str, Any] = json.loads(reply)
    return result
