"""Command line of the bundled P4Runtime target (options named as simple_switch_grpc's)."""

from __future__ import annotations

import argparse
import faulthandler
import signal
import sys
import threading
from concurrent import futures

import grpc

from .live_ports import LivePorts
from .security import add_tls_arguments, server_credentials
from .server import DataplaneService, Faults, P4RuntimeServicer
from .switch import Switch, SwitchConfig


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
    ap.add_argument(
        "--interface",
        "-i",
        action="append",
        default=[],
        metavar="PORT@IFNAME",
        help="live port over AF_PACKET (root): one traffic manager drains every egress port at "
        "--link-rate-bps in wall-clock time, strict priority across --priority-queues",
    )
    ap.add_argument("--fail-write", type=int, default=0, help="Nth Write RPC with updates answers UNAVAILABLE")
    ap.add_argument("--exit-on-write", type=int, default=0, help="the process dies at the Nth Write RPC with updates")
    add_tls_arguments(ap)
    args = ap.parse_args(argv)
    faulthandler.enable()  # a crash in the compiled engine leaves every thread's stack in the log
    faulthandler.register(signal.SIGUSR1, all_threads=True)  # and so does kill -USR1, on demand
    if not 1 <= args.priority_queues <= 8:
        ap.error("--priority-queues must be 1..8 (standard_metadata.priority is 3 bits)")
    try:
        tls = server_credentials(args)
    except ValueError as e:
        ap.error(str(e))

    switch = Switch(SwitchConfig(args.priority_queues, args.queue_depth, args.link_rate_bps))
    server = grpc.server(
        futures.ThreadPoolExecutor(max_workers=8), options=[("grpc.max_receive_message_length", 64 << 20)]
    )
    servicer = P4RuntimeServicer(switch, args.device_id, Faults(args.fail_write, args.exit_on_write))
    servicer.add_to_server(server)  # Write decoded by the engine
    server.add_generic_rpc_handlers((DataplaneService(switch).handler(),))
    live = LivePorts(switch, args.interface) if args.interface else None
    if live is not None:
        server.add_generic_rpc_handlers((live.handler(),))
    address = f"127.0.0.1:{args.grpc_port}"
    port = server.add_insecure_port(address) if tls is None else server.add_secure_port(address, tls)
    server.start()
    if live is not None:
        live.start()
    print(f"bmv2_target listening on 127.0.0.1:{port}", flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    server.stop(grace=0.5)
    return 0


if __name__ == "__main__":
    sys.exit(main())
