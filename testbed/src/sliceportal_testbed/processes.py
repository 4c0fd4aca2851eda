"""Data-plane processes the testbed starts, with pid files so a crashed run's leftovers can
be found: the bundled P4Runtime target (dataplane/bmv2), the NetFPGA Verilator model and the
XDP agent (drivers/xdp: it owns the XDP program and its pinned maps).

Every process the testbed starts is a :class:`ManagedProcess`: its argv carries the
testbed's prefix (in its interface or socket names), its pid goes to a pid file under
``run_dir(prefix)``, and its output to a log file beside it (never a pipe nobody reads:
a full pipe would stall the data plane). :func:`reap_leftovers` is what the next start
runs first: it ends what a pid file names and what is still running with the prefix in
its argv although its parent is gone.
"""

from __future__ import annotations

import contextlib
import json
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Protocol

from sliceportal.core.config import get_settings
from sliceportal.core.private_files import private_dir, write_private_file
from sliceportal.core.processes import stop_process, unix_socket_accepts

# The testbed is a development tool of the source checkout: it starts the data planes that
# scripts/bootstrap.sh builds there (the portal itself installs without one, core/config.py).
CHECKOUT = Path(__file__).resolve().parents[3]
BMV2_DIR = CHECKOUT / "dataplane" / "bmv2"
SP_SIM = CHECKOUT / "dataplane" / "netfpga" / "build" / "sim" / "sp_sim"
# what a leftover's argv names
DATA_PLANE_PROGRAMS = ("bmv2_target", "sp_sim", "simple_switch_grpc", "sliceportal_xdp.agent")


class ProcessError(RuntimeError):
    """A data-plane process that does not start; the message holds its last output."""


def free_port() -> int:
    """A TCP port on loopback nobody listens on now (for a server the caller starts next)."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


class RunningTarget(Protocol):
    address: str

    def stop(self) -> None: ...


def start_p4runtime_target(*args: str) -> RunningTarget:
    """The bundled P4Runtime target as a subprocess on a free port (``dataplane/bmv2``'s own
    launcher, which its tests use too); raises RuntimeError when it does not come up."""
    if str(BMV2_DIR) not in sys.path:
        sys.path.insert(0, str(BMV2_DIR))
    from bmv2_target.testing import Target

    target: RunningTarget = Target(*args)
    return target


def run_dir(prefix: str) -> Path:
    """Where a testbed with this prefix keeps pid, log, token and key files and its sockets:
    a directory only the portal's user enters (0700, checked) under the portal's run
    directory (settings ``run_dir``), never a fixed name in the shared temp directory."""
    return private_dir(run_path(prefix))


def run_path(prefix: str, base: Path | None = None) -> Path:
    """``run_dir(prefix)``'s path under ``base`` (default: this process's settings), not
    created: what only looks there (a check for leftovers) leaves no empty directory behind."""
    return Path(base if base is not None else get_settings().run_dir) / f"testbed-{prefix.rstrip('-')}"


class ManagedProcess:
    """One data-plane process: started with a pid file, checked, stopped, started again.

    ``ready`` is polled after the start until it is true (the process listens), so a
    caller never talks to a process that is not there yet.
    """

    def __init__(
        self,
        name: str,
        argv: list[str],
        prefix: str,
        ready: Callable[[], bool],
        address: str,
        env: dict[str, str] | None = None,
        timeout_s: float = 20.0,
    ) -> None:
        self.name, self.argv, self.prefix, self.address = name, argv, prefix, address
        self._ready, self._env, self._timeout_s = ready, env, timeout_s
        self.proc: subprocess.Popen[bytes] | None = None
        self.starts = 0
        folder = run_dir(prefix)
        self.pid_file, self.log_file = folder / f"{name}.pid", folder / f"{name}.log"

    def start(self) -> None:
        with self.log_file.open("ab") as log:
            self.proc = subprocess.Popen(
                self.argv, stdout=log, stderr=subprocess.STDOUT, env=self._env, start_new_session=True
            )  # a terminal's ^C reaches the portal only
        self.pid_file.write_text(f"{self.proc.pid}\n")
        self.starts += 1
        deadline = time.monotonic() + self._timeout_s
        while not self._ready():
            code = self.proc.poll()
            if code is not None or time.monotonic() > deadline:
                self.stop()
                why = f"exited with {code}" if code is not None else f"not ready after {self._timeout_s:.0f} s"
                raise ProcessError(f"{self.name} {why}: {self.last_output()}")
            time.sleep(0.05)

    def exit_code(self) -> int | None:
        """None while it runs (or was never started), else how it ended."""
        return None if self.proc is None else self.proc.poll()

    @property
    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def last_output(self, limit: int = 400) -> str:
        try:
            text = self.log_file.read_bytes()[-limit:].decode(errors="replace")
        except OSError:
            return ""
        return " ".join(text.split())

    def teardown(self) -> None:
        """Stop for good (the testbed stops): what the process leaves behind goes too."""
        self.stop()

    def stop(self) -> None:
        if self.proc is not None:
            stop_process(self.proc)
        self.pid_file.unlink(missing_ok=True)


def bmv2_process(
    prefix: str,
    ports: dict[int, str],
    grpc_port: int | None = None,
    link_rate_bps: int | None = None,
    tls_args: Sequence[str] = (),
) -> ManagedProcess:
    """The bundled P4 target on live ports ``{port: ifname}`` (AF_PACKET, as BMv2's ``-i``),
    8 priority queues, each egress port drained at ``link_rate_bps`` (None: unlimited), on a
    fixed gRPC port so a restart keeps the backend's address; ``tls_args`` are its server's
    TLS flags (``P4RuntimeCerts.server_args``)."""
    port = grpc_port or free_port()
    argv = [sys.executable, "-m", "bmv2_target", "--grpc-port", str(port), "--priority-queues", "8", *tls_args]
    if link_rate_bps is not None:
        argv += ["--link-rate-bps", str(link_rate_bps)]
    for p, ifname in sorted(ports.items()):
        argv += ["--interface", f"{p}@{ifname}"]
    env = dict(os.environ, PYTHONPATH=str(BMV2_DIR) + os.pathsep + os.environ.get("PYTHONPATH", ""))
    return ManagedProcess("bmv2", argv, prefix, lambda: _tcp_accepts(port), f"127.0.0.1:{port}", env=env)


def simple_switch_process(
    prefix: str, ports: dict[int, str], grpc_port: int | None = None, tls_args: Sequence[str] = ()
) -> ManagedProcess:
    """The real BMv2 (``simple_switch_grpc``, from ../shared/p4tools) on live ports, empty
    (``--no-p4``: the p4rt driver pushes the p4c build), 8 priority queues, on a fixed gRPC
    port so a restart keeps the backend's address. Its Thrift port is a free one, so that
    several testbeds (tests, a run) never collide on BMv2's default 9090 (BMv2 binds it to
    every interface, unauthenticated: docs/bmv2.md). ``tls_args``: as ``bmv2_process``'s."""
    exe = shutil.which("simple_switch_grpc")
    if exe is None:
        raise ProcessError("simple_switch_grpc is not on PATH (../shared/p4tools/install.sh installs it)")
    port = grpc_port or free_port()
    argv = [exe, "--no-p4", "--device-id", "1", "--thrift-port", str(free_port())]
    for p, ifname in sorted(ports.items()):
        argv += ["-i", f"{p}@{ifname}"]
    argv += ["--", "--grpc-server-addr", f"127.0.0.1:{port}", "--priority-queues", "8", *tls_args]
    return ManagedProcess("bmv2", argv, prefix, lambda: _tcp_accepts(port), f"127.0.0.1:{port}")


def netfpga_process(
    prefix: str, veth_in: str, veth_out: str, binary: Path = SP_SIM, live_drain_bps: float | None = None
) -> ManagedProcess:
    """The NetFPGA Verilator model as a live card between two interfaces; its register
    server on a Unix socket in the run directory. ``live_drain_bps``: its DMA drain paced in
    wall-clock time (the link its queues drain into), else in simulated cycles."""
    if not binary.exists():
        raise ProcessError(f"{binary} is missing (run: make -C dataplane/netfpga all)")
    sock = run_dir(prefix) / "netfpga.sock"
    sock.unlink(missing_ok=True)
    argv = [str(binary), "--socket", str(sock), "--veth-in", veth_in, "--veth-out", veth_out]
    if live_drain_bps is not None:
        argv += ["--live-drain-mbps", f"{live_drain_bps / 1e6:.6f}"]
    return ManagedProcess("netfpga", argv, prefix, lambda: unix_socket_accepts(sock), str(sock))


class XdpAgent(ManagedProcess):
    """The XDP agent of one backend, serving on a Unix socket in the run directory with a bearer
    token of its own (a file only root reads). Its program and maps are pinned under
    /sys/fs/bpf/sliceportal/<pin_name>: they forward while the agent restarts (the next one
    takes them over) and outlive it, so :meth:`teardown` removes them when the testbed stops."""

    def __init__(self, prefix: str, pin_name: str, interface: str, netns: str, options: dict[str, object]) -> None:
        folder = run_dir(prefix)
        sock = self.sock = folder / "xdp-agent.sock"
        sock.unlink(missing_ok=True)
        token_file = self.token_file = folder / "xdp-agent.token"
        self.token = secrets.token_urlsafe(24)
        write_private_file(token_file, self.token)
        # --replace: pins of another build (a crashed run of an older checkout) are removed, the
        # portal re-pushes its rule set; pins of this build are taken over as they are
        argv = [
            sys.executable,
            "-m",
            "sliceportal_xdp.agent",
            "--backend",
            pin_name,
            "--interface",
            interface,
            "--netns",
            netns,
            "--listen",
            f"unix:{sock}",
            "--token-file",
            str(token_file),
            "--options",
            json.dumps(options),
            "--replace",
        ]
        super().__init__("xdp-agent", argv, prefix, lambda: unix_socket_accepts(sock), f"unix:{sock}", timeout_s=60.0)

    def teardown(self) -> None:
        """Stop the agent, then detach the program and remove its pins (what a stopped testbed
        must not leave in the kernel)."""
        self.stop()
        argv = [a if a != "--replace" else "--teardown" for a in self.argv]  # same device: detached too
        with self.log_file.open("ab") as log:
            subprocess.run(argv, stdout=log, stderr=subprocess.STDOUT, timeout=60, check=False)
        self.token_file.unlink(missing_ok=True)
        self.sock.unlink(missing_ok=True)


def _tcp_accepts(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.2)
        return s.connect_ex(("127.0.0.1", port)) == 0


def _cmdline(pid: int) -> list[str]:
    try:
        raw = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return []
    return [a.decode(errors="replace") for a in raw.split(b"\0") if a]


def parent_pid(pid: int) -> int | None:
    """``pid``'s parent, None when it has ended."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return int(stat.rsplit(")", 1)[1].split()[1])


def _ours(argv: list[str], prefix: str, run: Path) -> bool:
    """A data-plane program whose interfaces or socket carry this testbed's prefix."""
    joined = " ".join(argv)
    return any(p in joined for p in DATA_PLANE_PROGRAMS) and (
        f"@{prefix}" in joined or f" {prefix}" in joined or str(run) in joined
    )


def leftovers(prefix: str, run_base: Path | None = None) -> list[int]:
    """Pids of data-plane processes a crashed run with this prefix left behind: those its
    pid files name, and orphans (parent gone: re-parented to init) with the prefix in argv.
    ``run_base``: the run directory of the portal that ran it, if not this process's."""
    found: set[int] = set()
    me = os.getpid()
    run = run_path(prefix, run_base)
    for pid_file in run.glob("*.pid"):
        with contextlib.suppress(ValueError, OSError):
            pid = int(pid_file.read_text().split()[0])
            if _ours(_cmdline(pid), prefix, run) and parent_pid(pid) != me:
                found.add(pid)
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            pid = int(entry.name)
            if pid != me and parent_pid(pid) == 1 and _ours(_cmdline(pid), prefix, run):
                found.add(pid)
    return sorted(found)


def reap_leftovers(prefix: str) -> list[int]:
    """End what :func:`leftovers` finds (TERM, then KILL) and remove the pid files."""
    pids = leftovers(prefix)
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 5
    for pid in pids:
        while Path(f"/proc/{pid}").exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        with contextlib.suppress(ProcessLookupError):
            if Path(f"/proc/{pid}").exists():
                os.kill(pid, signal.SIGKILL)
    for pid_file in run_path(prefix).glob("*.pid"):
        pid_file.unlink(missing_ok=True)
    return pids
