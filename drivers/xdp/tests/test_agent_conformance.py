"""The core's conformance suite run against the XDP driver in agent mode: every contract
call crosses HTTP, over a Unix socket, to ``python -m sliceportal_xdp.agent`` (a load-only
data plane, pinned; test_agent.py covers TCP).
The restart hook is a lost host: the agent is killed and its pins torn down, so the next
agent starts empty and the reconciler must refill it through the agent."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sliceportal.drivers.conformance import DriverConformance
from sliceportal_xdp.agent_client import AgentClient
from sliceportal_xdp.driver import Driver

from .test_agent import agent_argv, remove_stale_test_pins


@dataclass
class LoadOnlyAgent:
    backend: str
    token: str
    token_file: Path
    socket: Path
    proc: subprocess.Popen[bytes] | None = None

    def argv(self, *extra: str) -> list[str]:
        return agent_argv(self.backend, "--options", '{"overload_poll_s": 0, "capacity": {"src_ip": 2048}}', *extra)

    def start(self) -> None:
        self.proc = subprocess.Popen(
            self.argv("--listen", f"unix:{self.socket}", "--token-file", str(self.token_file), "--test-hooks")
        )
        client = AgentClient(f"unix:{self.socket}", self.token, 5.0, retry_s=0.5)
        try:
            client.wait_ready(60, self._alive)
        finally:
            client.close()

    def _alive(self) -> None:
        if self.proc is not None and self.proc.poll() is not None:
            raise AssertionError(f"the agent exited with {self.proc.returncode}")

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()

    def teardown(self) -> None:
        out = subprocess.run(self.argv("--teardown"), capture_output=True, text=True, timeout=60)
        assert out.returncode == 0, out.stderr


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LoadOnlyAgent]:
    remove_stale_test_pins()
    token = os.urandom(24).hex()
    tmp = tmp_path_factory.mktemp("agent")
    token_file = tmp / "token"
    token_file.write_text(token)
    a = LoadOnlyAgent(f"conformance-{os.getpid()}", token, token_file, tmp / "agent.sock")
    a.start()
    try:
        yield a
    finally:
        a.stop()
        a.teardown()


@pytest.mark.needs_root
class TestXdpAgentConformance(DriverConformance):
    @pytest.fixture
    def driver(self, agent: LoadOnlyAgent) -> Iterator[Driver]:  # type: ignore[override]
        d = Driver({"address": f"unix:{agent.socket}", "agent_token": agent.token})
        yield d
        d.close()

    @pytest.fixture
    def restart(self, agent: LoadOnlyAgent) -> Callable[[], None]:  # type: ignore[override]
        def lose_the_host() -> None:
            agent.stop()
            agent.teardown()
            agent.start()

        return lose_the_host

    @pytest.fixture
    def inject_apply_failure(self, driver: Driver) -> Callable[[], None]:  # type: ignore[override]
        return lambda: driver.inject_write_failure(after_entries=1)  # forwarded to the agent's test hook
