"""Start the bundled target as a subprocess for tests and benchmarks."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent  # dataplane/bmv2
P4INFO = HERE / "compiled" / "slicing.p4info.txtpb"  # p4c's (make compile)


class Target:
    def __init__(self, *args: str) -> None:
        env = dict(os.environ, PYTHONPATH=str(HERE) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "bmv2_target", "--grpc-port", "0", *args],
            stdout=subprocess.PIPE,
            text=True,
            env=env,
        )
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        if "listening on" not in line:
            self.proc.kill()
            raise RuntimeError(f"target did not start: {line!r}")
        self.address = line.rsplit(" ", 1)[1].strip()

    def stop(self) -> None:
        stop_process(self.proc)


def stop_process(proc: subprocess.Popen[str], timeout_s: float = 5) -> None:
    """SIGTERM, and SIGKILL if it is still there after ``timeout_s``."""
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
