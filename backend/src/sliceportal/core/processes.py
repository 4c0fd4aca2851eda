"""Child processes the parts of the portal start (the NetFPGA simulator, simple_switch_grpc, the
testbed's data planes): stopping one for sure, and telling when its Unix socket serves."""

from __future__ import annotations

import socket
import subprocess
from pathlib import Path
from typing import Any


def stop_process(proc: subprocess.Popen[Any], timeout_s: float = 10.0) -> None:
    """SIGTERM, SIGKILL when it has not ended within ``timeout_s``; reaped either way."""
    if proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def unix_socket_accepts(path: Path) -> bool:
    """True once a server accepts connections on ``path``: the file appears at bind(), before
    listen(), so its existence alone is no answer."""
    if not path.exists():
        return False
    with socket.socket(socket.AF_UNIX) as s:
        try:
            s.connect(str(path))
        except OSError:
            return False
    return True
