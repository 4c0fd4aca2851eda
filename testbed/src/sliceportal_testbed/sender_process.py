"""A testbed sender in a process of its own.

The live testbed's senders used to be threads of the controller. Each one spins and bursts
in Python, so on a busy host they held the controller's GIL while its health probes, job
resumer and reconciler waited for it: a third of the controller's samples were sender
frames (py-spy, ``backend/tests/fault/test_load.py`` at load 40), and CI saw a live
NetFPGA model declared down because its probes' answers sat behind them. In a process of
its own a sender competes with the controller only for the CPU, which the kernel shares.

The processes come from a forkserver that imported the sender once (a spawned interpreter
takes ~1.8 s to import it, on every traffic change). The packets sent per flow are in
shared memory, read by the meters' loss accounting as the thread's list was. A child that
outlives its parent would keep sending into a testbed nobody measures: it asks the kernel
to kill it when the forkserver, which ends with the controller, is gone.
"""

from __future__ import annotations

import ctypes
import multiprocessing
import signal
import sys
from collections.abc import Sequence
from typing import Any

from sliceportal.traffic.packets import Underlay
from sliceportal.traffic.scenarios import ScenarioFlow
from sliceportal.traffic.sender import SendError, StopFlag, open_sender, send

_CTX = multiprocessing.get_context("forkserver")
_CTX.set_forkserver_preload(["sliceportal.traffic.sender"])
PR_SET_PDEATHSIG = 1


def _run(
    namespace: str,
    ifname: str,
    flows: Sequence[ScenarioFlow],
    pps: float,
    underlay: Underlay,
    progress: Any,
    stop: StopFlag,
) -> None:
    """The child: send until ``stop`` is set (or the parent is gone)."""
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL)
    try:
        out = open_sender(ifname, namespace)
        try:
            send(out, flows, rate_pps=pps, stop=stop, underlay=underlay, progress=progress)
        finally:
            out.close()
    except SendError as exc:  # the parent sees the exit code and starts another one
        print(f"testbed sender on {ifname}: {exc}", file=sys.stderr)
        sys.exit(1)


class SenderProcess:
    """One backend's sender: ``flows`` round robin at ``pps`` into ``ifname`` of ``namespace``."""

    def __init__(
        self, name: str, namespace: str, ifname: str, flows: Sequence[ScenarioFlow], pps: float, underlay: Underlay
    ) -> None:
        # packets sent per flow, kept by the child; read here without a lock (one writer, and a
        # torn read of a counter is at most one packet stale)
        self.progress: Any = _CTX.Array(ctypes.c_uint64, len(flows), lock=False)
        self._stop = _CTX.Event()
        self._proc = _CTX.Process(
            target=_run,
            name=f"testbed-send-{name}",
            daemon=True,
            args=(namespace, ifname, list(flows), pps, underlay, self.progress, self._stop),
        )

    def start(self) -> None:
        self._proc.start()

    def is_alive(self) -> bool:
        return self._proc.is_alive()

    @property
    def stopping(self) -> bool:
        return self._stop.is_set()

    def stop(self, timeout_s: float = 5.0) -> None:
        """Ask it to stop, then make sure it did."""
        self._stop.set()
        if self._proc.pid is None:
            return
        self._proc.join(timeout_s)
        if self._proc.is_alive():
            self._proc.kill()
            self._proc.join(timeout_s)
