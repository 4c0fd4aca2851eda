"""core/stack_dumps.py: ``kill -USR1`` asks a portal process (an API worker, the controller,
``sliceportal run``) for every thread's stack, and ends none of them (SIGUSR1's default
action would). uvicorn's parent process catches SIGUSR1 itself."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.factories import wait_until

ENTRIES = {
    # what an API worker imports (asgi.py); engines connect lazily, so no database is touched
    "api worker": "import sliceportal.asgi",
    # what `sliceportal run` and `sliceportal controller` call first
    "cli": "from sliceportal.cli import _configure_logging; _configure_logging()",
}
WAITING = """
import threading
def a_waiting_thread() -> None:
    threading.Event().wait()
threading.Thread(target=a_waiting_thread, daemon=True).start()
print("ready", flush=True)
threading.Event().wait()  # until the test kills it
"""


@pytest.mark.parametrize("entry", sorted(ENTRIES))
def test_a_portal_process_dumps_every_threads_stack_and_lives_on(entry: str, tmp_path: Path) -> None:
    err = tmp_path / "stderr"
    env = {**os.environ, "DATABASE_URL": "postgresql+psycopg://unused@/unused"}
    with err.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-c", ENTRIES[entry] + "\n" + WAITING], stdout=subprocess.PIPE, stderr=out, env=env
        )
    try:
        assert proc.stdout is not None and proc.stdout.readline() == b"ready\n", err.read_text()
        os.kill(proc.pid, signal.SIGUSR1)
        dump = wait_until("the stacks in stderr", lambda: "a_waiting_thread" in err.read_text() and err.read_text())
        assert dump.count("(most recent call first)") >= 2  # the main thread, the waiting one (and any other)
        assert proc.poll() is None
    finally:
        proc.kill()
        proc.wait()
