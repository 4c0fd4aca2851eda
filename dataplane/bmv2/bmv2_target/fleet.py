"""Many bundled targets in one process, for scale tests and benchmarks: each a switch of its
own (engine, tables, counters) behind a gRPC server of its own on a free port, as
``python -m bmv2_target`` serves one. Packing them into one process is what lets 100 of
them run on a 2-core machine (a process each spends its start importing gRPC).

    python -m bmv2_target.fleet K    # prints one JSON line: the K addresses; SIGTERM ends it
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from concurrent import futures

import grpc

from .server import DataplaneService, Faults, P4RuntimeServicer
from .switch import Switch, SwitchConfig
from .testing import HERE, stop_process


def serve(count: int, priority_queues: int = 8) -> list[tuple[grpc.Server, int]]:
    """``count`` switches, each with its P4Runtime server started on a free loopback port."""
    servers = []
    for _ in range(count):
        switch = Switch(SwitchConfig(priority_queues, 64, None))
        # a thread per open stream (each portal process that drives the switch holds one) plus
        # the unary calls: as ``python -m bmv2_target`` serves one; with 2, a second process's
        # session left no thread for its first call
        server = grpc.server(
            futures.ThreadPoolExecutor(max_workers=8), options=[("grpc.max_receive_message_length", 64 << 20)]
        )
        servicer = P4RuntimeServicer(switch, 1, Faults(0, 0))
        servicer.add_to_server(server)
        server.add_generic_rpc_handlers((DataplaneService(switch).handler(),))
        port = server.add_insecure_port("127.0.0.1:0")
        server.start()
        servers.append((server, port))
    return servers


class Fleet:
    """``count`` targets in a subprocess of their own; ``addresses`` (host:port each), ``stop()``."""

    def __init__(self, count: int) -> None:
        env = dict(os.environ, PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bmv2_target.fleet", str(count)], stdout=subprocess.PIPE, text=True, env=env
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if not line.startswith("["):
            self.stop()
            raise RuntimeError(f"fleet of {count} targets did not start: {line!r}")
        self.addresses: list[str] = json.loads(line)

    def stop(self) -> None:
        stop_process(self.proc, timeout_s=10)


def main() -> int:
    servers = serve(int(sys.argv[1]))
    print(json.dumps([f"127.0.0.1:{port}" for _, port in servers]), flush=True)
    done = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: done.set())
    signal.signal(signal.SIGINT, lambda *_: done.set())
    done.wait()
    for server, _ in servers:
        server.stop(grace=0)
    return 0


if __name__ == "__main__":
    sys.exit(main())
