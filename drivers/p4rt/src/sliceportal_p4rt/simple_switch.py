"""Start the real BMv2 (``simple_switch_grpc``) for tests, benchmarks and the testbed.

The switch starts empty (``--no-p4``); the p4rt driver pushes the p4c build it ships
(dataplane/bmv2/compiled/) with SetForwardingPipelineConfig when it first connects.

Its P4Runtime server is plaintext unless ``server_tls`` is given (``--grpc-server-ssl``, and
``--grpc-server-with-client-auth`` for mutual TLS). Its Thrift runtime server has no address
option and no authentication: BMv2 binds it to every interface (docs/bmv2.md, "Thrift").
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path

import grpc

from sliceportal.core.processes import stop_process

from .tls import Tls, open_channel

BINARY = "simple_switch_grpc"


class SimpleSwitchError(RuntimeError):
    """simple_switch_grpc is missing, exited, or did not answer in time."""


def _free_port(host: str) -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


@dataclass(frozen=True)
class ServerTls:
    """The switch's side of TLS: its certificate and key, and with ``client_auth`` the CA a
    client's certificate must chain to (mutual TLS). Paths to PEM files."""

    cert: Path
    key: Path
    cacert: Path | None = None
    client_auth: bool = False

    def args(self) -> list[str]:
        """simple_switch_grpc's target options (after ``--``); the bundled target takes the same."""
        args = ["--grpc-server-ssl", "--grpc-server-cert", str(self.cert), "--grpc-server-key", str(self.key)]
        if self.cacert is not None:
            args += ["--grpc-server-cacert", str(self.cacert)]
        return [*args, "--grpc-server-with-client-auth"] if self.client_auth else args


@dataclass
class SimpleSwitch:
    """A running simple_switch_grpc: its P4Runtime ``address`` (host:port) and ``stop()``."""

    address: str
    proc: subprocess.Popen[bytes]
    log: Path
    interfaces: dict[int, str] = field(default_factory=dict)

    def alive(self) -> bool:
        return self.proc.poll() is None

    def stop(self) -> None:
        stop_process(self.proc)
        self.log.unlink(missing_ok=True)

    def __enter__(self) -> SimpleSwitch:
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()


def start_simple_switch_grpc(
    interfaces: Mapping[int, str] | None = None,
    priority_queues: int = 8,
    *,
    device_id: int = 1,
    host: str = "127.0.0.1",
    port: int = 0,
    cpu_port: int | None = None,
    extra_args: Sequence[str] = (),
    server_tls: ServerTls | None = None,
    client_tls: Tls | None = None,
    binary: str = BINARY,
    ready_timeout_s: float = 45.0,  # seconds on a loaded 2-core machine (CI saw > 15 s)
) -> SimpleSwitch:
    """Start ``simple_switch_grpc --no-p4`` with ``interfaces`` {port: ifname} and wait until
    its P4Runtime server answers. ``port`` 0 picks a free TCP port.

    ``priority_queues`` must match the driver's ``lanes``: without the option BMv2 drops
    every packet whose standard_metadata.priority is not 0.

    ``server_tls`` serves P4Runtime over TLS; ``client_tls`` is how this function's readiness
    check connects then (with client authentication, a certificate the switch accepts).
    """
    exe = shutil.which(binary)
    if exe is None:
        raise SimpleSwitchError(f"{binary} is not on PATH (install ../shared/p4tools with its install.sh)")
    if not 1 <= priority_queues <= 8:
        raise SimpleSwitchError(f"priority_queues must be 1..8, got {priority_queues}")
    if server_tls is not None and client_tls is None:
        raise SimpleSwitchError("client_tls: needed with server_tls (the readiness check completes a handshake)")
    port = port or _free_port(host)
    # a Thrift port of its own: two switches on the default 9090 (tests and benches of
    # several processes at once) made the second one exit with SIGSEGV at start
    args = [exe, "--no-p4", "--device-id", str(device_id), "--thrift-port", str(_free_port(host))]
    for p, ifname in sorted((interfaces or {}).items()):
        args += ["-i", f"{p}@{ifname}"]
    args += list(extra_args)
    args += ["--", "--grpc-server-addr", f"{host}:{port}", "--priority-queues", str(priority_queues)]
    if cpu_port is not None:
        args += ["--cpu-port", str(cpu_port)]
    if server_tls is not None:
        args += server_tls.args()
    fd, name = tempfile.mkstemp(prefix="simple_switch_grpc.", suffix=".log")
    log = Path(name)
    with open(fd, "wb") as out:
        proc = subprocess.Popen(args, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
    switch = SimpleSwitch(f"{host}:{port}", proc, log, dict(interfaces or {}))
    deadline = time.monotonic() + ready_timeout_s
    channel = open_channel(switch.address, client_tls if server_tls is not None else None)
    # one future for the whole wait, cancelled before the channel closes: a future per try left
    # gRPC's polling threads behind, which then failed on the closed channel
    ready = grpc.channel_ready_future(channel)
    try:
        while True:
            if proc.poll() is not None:
                text = log.read_text(errors="replace")[-2000:]
                switch.stop()
                raise SimpleSwitchError(f"{binary} exited with {proc.returncode}: {text}")
            try:
                ready.result(timeout=0.2)
                return switch
            except grpc.FutureTimeoutError:
                if time.monotonic() > deadline:
                    # what it said (a port it could not bind, a hang at start) goes with the log
                    text = log.read_text(errors="replace")[-2000:]
                    switch.stop()
                    raise SimpleSwitchError(
                        f"{binary} did not open its P4Runtime server on {switch.address} within "
                        f"{ready_timeout_s:.0f} s; its output: {text or '(none)'}"
                    ) from None
    finally:
        ready.cancel()
        channel.close()
