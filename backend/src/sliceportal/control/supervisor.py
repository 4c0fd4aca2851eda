"""Process supervision for ``sliceportal run``: the controller and the API server as child
processes, each restarted with backoff when it dies, all stopped cleanly together.

Children run in sessions of their own, so a Ctrl-C at the terminal reaches only the
supervisor, which then stops them in order with SIGTERM (the controller tears the testbed
down on it, uvicorn drains its workers) and kills what is still there after a grace period.
"""

from __future__ import annotations

import logging
import os
import signal
import subprocess
import threading
import time
from dataclasses import dataclass, field

log = logging.getLogger(__name__)

RESTART_BACKOFF_S = (1.0, 30.0)  # first and largest wait before a restart
STABLE_AFTER_S = 60.0  # a child that ran this long starts its backoff afresh when it dies
STOP_GRACE_S = 60.0  # the testbed's teardown takes seconds; then SIGKILL


@dataclass
class Child:
    name: str
    argv: list[str]
    env: dict[str, str] = field(default_factory=lambda: dict(os.environ))
    proc: subprocess.Popen[bytes] | None = None
    starts: int = 0
    failures: int = 0
    started_at: float = 0.0
    restart_at: float | None = None

    def start(self) -> None:
        self.proc = subprocess.Popen(self.argv, env=self.env, start_new_session=True)
        self.starts += 1
        self.started_at = time.monotonic()
        self.restart_at = None
        log.info(
            "started %s (pid %d)%s", self.name, self.proc.pid, f", restart {self.starts - 1}" if self.starts > 1 else ""
        )

    @property
    def pid(self) -> int | None:
        return None if self.proc is None else self.proc.pid


class Supervisor:
    def __init__(self, children: list[Child]) -> None:
        self.children = children
        self.stopping = threading.Event()

    def run(self) -> None:
        """Start every child, restart the dead, until ``stopping`` is set; then stop them all."""
        try:
            for child in self.children:
                child.start()
            while not self.stopping.wait(0.5):
                for child in self.children:
                    self._check(child)
        finally:
            self.stop_all()

    def _check(self, child: Child) -> None:
        proc = child.proc
        if proc is None or proc.poll() is None:
            return
        now = time.monotonic()
        if child.restart_at is None:
            child.failures = 1 if now - child.started_at >= STABLE_AFTER_S else child.failures + 1
            wait = min(RESTART_BACKOFF_S[1], RESTART_BACKOFF_S[0] * 2 ** (child.failures - 1))
            child.restart_at = now + wait
            log.error(
                "%s (pid %d) exited with code %s; restarting it in %.0f s", child.name, proc.pid, proc.returncode, wait
            )
        elif now >= child.restart_at:
            child.start()

    def stop_all(self) -> None:
        """SIGTERM to every child in reverse start order (the API first, the controller last)."""
        for child in reversed(self.children):
            if child.proc is not None and child.proc.poll() is None:
                log.info("stopping %s (pid %d)", child.name, child.proc.pid)
                child.proc.send_signal(signal.SIGTERM)
        deadline = time.monotonic() + STOP_GRACE_S
        for child in reversed(self.children):
            if child.proc is None:
                continue
            try:
                child.proc.wait(timeout=max(0.1, deadline - time.monotonic()))
            except subprocess.TimeoutExpired:
                log.error("%s (pid %d) did not stop within %.0f s: killed", child.name, child.proc.pid, STOP_GRACE_S)
                os.killpg(child.proc.pid, signal.SIGKILL)
                child.proc.wait()
