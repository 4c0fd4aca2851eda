"""The run command's supervisor: a child that dies is restarted; stopping ends every child."""

from __future__ import annotations

import os
import signal
import sys
import threading
import time

from sliceportal.control.supervisor import Child, Supervisor

SLEEPER = [sys.executable, "-c", "import time; time.sleep(600)"]


def test_a_dead_child_is_restarted_and_stop_ends_them_all() -> None:
    a, b = Child("a", SLEEPER), Child("b", SLEEPER)
    sup = Supervisor([a, b])
    runner = threading.Thread(target=sup.run)
    runner.start()
    try:
        deadline = time.monotonic() + 20
        while not (a.proc and b.proc) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert a.proc is not None and b.proc is not None
        first = a.proc
        os.kill(first.pid, signal.SIGKILL)
        while a.starts < 2 and time.monotonic() < deadline:
            time.sleep(0.05)
        assert a.starts == 2 and a.proc is not first and a.proc.poll() is None  # restarted (1 s backoff)
        assert b.starts == 1  # the other untouched
    finally:
        sup.stopping.set()
        runner.join(timeout=30)
    assert not runner.is_alive()
    assert a.proc.poll() is not None and b.proc is not None and b.proc.poll() is not None
    assert b.proc.returncode == -signal.SIGTERM
