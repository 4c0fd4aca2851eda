"""Command line of the bundled P4Runtime target (options named as simple_switch_grpc's)."""

from __future__ import annotations

import argparse
import signal
import socket
import sys
import threading
import time
from concurrent import futures

import grpc
from p4.v1 import p4runtime_pb2_grpc

from .packet_io import open_port, receive
from .server import DataplaneService, Faults, P4RuntimeServicer
from .switch import Switch, SwitchConfig


def _live_ports(switch: Switch, spec: list[str]) -> None:
    """Ports N@ifname over AF_PACKET (needs root); receive time is the packet clock."""
    socks: dict[int, socket.socket] = {}
    for item in spec:
        port_text, _, ifname = item.partition("@")
        socks[int(port_text)] = open_port(ifname)

    def pump(port: int, s: socket.socket) -> None:
        while True:
            data = receive(s)
            if data is None:
                continue
            if switch.pipeline is None:
                continue
            for out in switch.run([(time.time_ns(), port, data)]):
                dst = socks.get(out.port)
                if dst is not None:
                    dst.send(out.data)

    for port, s in socks.items():
        threading.Thread(target=pump, args=(port, s), daemon=True).start()


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(prog="bmv2_target", description=__doc__)
    ap.add_argument("--grpc-port", type=int, default=9559, help="0 = any free port (printed)")
    ap.add_argument("--device-id", type=int, default=1)
    ap.add_argument(
        "--priority-queues",
        type=int,
        default=1,
        help="strict-priority queues per port (BMv2 default 1: priority > 0 drops)",
    )
    ap.add_argument("--queue-depth", type=int, default=64, help="packets per queue (BMv2 default 64)")
    ap.add_argument("--link-rate-bps", type=int, default=None, help="egress link rate; default unlimited")
    ap.add_argument("--interface", "-i", action="append", default=[], metavar="PORT@IFNAME")
    ap.add_argument("--fail-write", type=int, default=0, help="Nth Write RPC answers UNAVAILABLE")
    ap.add_argument("--exit-on-write", type=int, default=0, help="the process dies at the Nth Write RPC")
    args = ap.parse_args(argv)
    if not 1 <= args.priority_queues <= 8:
        ap.error("--priority-queues must be 1..8 (standard_metadata.priority is 3 bits)")

    switch = Switch(SwitchConfig(args.priority_queues, args.queue_depth, args.link_rate_bps))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8), options=[("grpc.max_receive_message_length", 64 << 20)]
    )
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(
        P4RuntimeServicer(switch, args.device_id, Faults(args.fail_write, args.exit_on_write)), server
    )
    server.add_generic_rpc_handlers((DataplaneService(switch).handler(),))
    port = server.add_insecure_port(f"127.0.0.1:{args.grpc_port}")
    server.start()
    if args.interface:
        _live_ports(switch, args.interface)
    print(f"bmv2_target listening on 127.0.0.1:{port}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(grace=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
