"""Start and talk to the Verilator model of the data plane (dataplane/netfpga/sim).

Used by the tests, the benchmarks and the portal's embedded testbed: the model is the
NetFPGA card as far as everyone else can tell.
"""

from __future__ import annotations

import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

from sliceportal.core.processes import stop_process, unix_socket_accepts
from sliceportal.drivers.contract import DriverError

DEFAULT_BINARY = Path(__file__).resolve().parents[4] / "dataplane" / "netfpga" / "build" / "sim" / "sp_sim"


@dataclass
class SimProcess:
    address: str
    proc: subprocess.Popen[bytes]

    def command(self, line: str, timeout: float | None = None) -> str:
        """One control command on a connection of its own; the payload of its OK reply."""
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(timeout)
            s.connect(self.address)
            s.sendall(line.encode() + b"\n")
            buf = b""
            while not buf.endswith(b"\n"):
                chunk = s.recv(4096)
                if not chunk:
                    raise DriverError(f"simulator closed the connection on {line!r}")
                buf += chunk
        reply = buf.decode().strip()
        if not reply.startswith("OK"):
            raise DriverError(f"simulator refused {line!r}: {reply}")
        return reply[3:]

    def stop(self) -> None:
        stop_process(self.proc)


def start(sock: Path, *args: str, binary: Path = DEFAULT_BINARY, timeout: float = 10.0) -> SimProcess:
    """Run ``sp_sim --socket sock *args`` and wait until it listens."""
    if not binary.exists():
        raise DriverError(f"{binary} is missing", hint="run: make -C dataplane/netfpga all")
    sock.unlink(missing_ok=True)
    proc = subprocess.Popen([str(binary), "--socket", str(sock), *args], stderr=subprocess.PIPE)
    deadline = time.monotonic() + timeout
    # the socket file appears at bind(), before listen(): wait until a connection is accepted
    while not unix_socket_accepts(sock):
        if proc.poll() is not None or time.monotonic() > deadline:
            proc.kill()
            err = proc.stderr.read().decode(errors="replace") if proc.stderr else ""
            raise DriverError(f"sp_sim did not start: {err.strip()}")
        time.sleep(0.02)
    return SimProcess(str(sock), proc)
