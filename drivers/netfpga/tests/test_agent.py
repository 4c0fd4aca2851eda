"""sp_sim as an agent another host reaches: a TCP listener on a non-loopback-only address
(127.0.0.2, as a second host would dial it), a token, and the driver's commands only.

Each test runs a real sp_sim process; the driver is the real driver over TCP.
"""

from __future__ import annotations

import secrets
import socket
import subprocess
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from sliceportal.drivers.conformance import DriverConformance
from sliceportal.drivers.contract import OptionsError
from sliceportal_netfpga import regmap, simulator
from sliceportal_netfpga.csr import CsrClient
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.options import NetfpgaOptions
from sliceportal_netfpga.simulator import SimProcess

HOST = "127.0.0.2"  # not 127.0.0.1: what --listen-host binds is what a peer must dial


def _free_port() -> int:
    with socket.socket() as s:
        s.bind((HOST, 0))
        return int(s.getsockname()[1])


@dataclass
class Agent:
    proc: SimProcess
    address: str  # tcp:HOST:PORT
    token: str
    args: list[str]

    @property
    def port(self) -> int:
        return int(self.address.rpartition(":")[2])

    def talk(self, *lines: str) -> list[str]:
        """Send ``lines`` at once on a fresh connection; every reply line until the agent
        has answered them all or closed the connection."""
        with socket.create_connection((HOST, self.port), timeout=60) as s:
            s.sendall("".join(f"{line}\n" for line in lines).encode())
            buf = b""
            while buf.count(b"\n") < len(lines):
                chunk = s.recv(65536)
                if not chunk:
                    break
                buf += chunk
        return buf.decode().splitlines()

    def authed(self, line: str) -> str:
        """One command after AUTH (a test command needs --test-commands)."""
        csr = CsrClient(self.address, 600, self.token)
        try:
            return csr.command(line)
        finally:
            csr.close()


def _start(binary: Path, tmp_path: Path, *extra: str) -> Agent:
    token = secrets.token_urlsafe(24)
    token_file = tmp_path / "agent.token"
    token_file.write_text(token + "\n")
    port = _free_port()
    args = ["--tcp", str(port), "--listen-host", HOST, "--token-file", str(token_file), *extra]
    # start() waits for the Unix socket to accept; the TCP listener is bound before that loop
    proc = simulator.start(tmp_path / "agent.sock", *args, binary=binary)
    return Agent(proc, f"tcp:{HOST}:{port}", token, args)


@pytest.fixture
def agent(sim_binary: Path, tmp_path: Path) -> Iterator[Agent]:
    a = _start(sim_binary, tmp_path)
    yield a
    a.proc.stop()


@pytest.fixture
def test_agent(sim_binary: Path, tmp_path: Path) -> Iterator[Agent]:
    a = _start(sim_binary, tmp_path, "--test-commands")
    yield a
    a.proc.stop()


# ---- the protocol ---------------------------------------------------------------------------


def test_the_right_token_opens_the_driver_commands(agent: Agent) -> None:
    replies = agent.talk(
        f"AUTH {agent.token}", f"R {regmap.ID:#x}", f"W {regmap.SCRATCH:#x} 0x5", f"R {regmap.SCRATCH:#x}"
    )
    assert replies == ["OK", f"OK {regmap.ID_VALUE}", "OK", "OK 5"]


@pytest.mark.parametrize("first", ["AUTH wrong-token-of-enough-length", "AUTH", "AUTH  {token}", "AUTH {token}x"])
def test_a_wrong_token_is_refused_and_nothing_after_it_runs(agent: Agent, first: str) -> None:
    before = agent.authed(f"R {regmap.SCRATCH:#x}")
    # the write pipelined behind the refused AUTH must not reach the register
    replies = agent.talk(first.format(token=agent.token), f"W {regmap.SCRATCH:#x} 0x1234", "R 0x0")
    assert len(replies) == 1 and replies[0].startswith("ERR unauthorized")
    assert agent.authed(f"R {regmap.SCRATCH:#x}") == before


def test_a_connection_without_auth_is_refused_before_any_register_is_touched(agent: Agent) -> None:
    agent.authed(f"W {regmap.SCRATCH:#x} 0x77")
    replies = agent.talk(f"W {regmap.SCRATCH:#x} 0x1234", f"R {regmap.SCRATCH:#x}")
    assert len(replies) == 1 and replies[0].startswith("ERR unauthorized")
    assert agent.authed(f"R {regmap.SCRATCH:#x}") == str(0x77)


def test_the_unix_socket_needs_the_token_too(agent: Agent) -> None:
    with pytest.raises(Exception, match="unauthorized"):
        agent.proc.command("R 0x0", timeout=60)


def test_an_endless_line_is_cut_off(agent: Agent) -> None:
    assert agent.talk("X" * 100_000) == ["ERR line too long"]


@pytest.mark.parametrize(
    "command",
    [
        "INJECT /etc/passwd",
        "INJECT_DMA /etc/passwd",
        "CAPTURE /tmp/x.pcap",
        "FAULT 0",
        "QUIT",
        "RUN",
        "RATES 1 1",
        "LIVE_DRAIN 5",
        "STATS",
    ],
)
def test_test_commands_are_refused_with_a_token(agent: Agent, tmp_path: Path, command: str) -> None:
    command = command.replace("/tmp/x.pcap", str(tmp_path / "x.pcap"))
    replies = agent.talk(f"AUTH {agent.token}", command, f"R {regmap.ID:#x}")
    assert replies[0] == "OK"
    assert replies[1].startswith("ERR refused: ") and "--test-commands" in replies[1]
    assert replies[2] == f"OK {regmap.ID_VALUE}"  # the connection and the process live on
    assert not (tmp_path / "x.pcap").exists()
    assert agent.proc.proc.poll() is None


def test_test_commands_run_with_test_commands(test_agent: Agent, tmp_path: Path) -> None:
    out = tmp_path / "out.pcap"
    assert test_agent.authed(f"CAPTURE {out}") == ""
    assert test_agent.authed("RUN").split()[0].isdigit()
    assert out.exists()
    assert test_agent.authed("QUIT") == ""
    test_agent.proc.proc.wait(timeout=10)


def test_auth_without_a_token_file_is_refused(sim: SimProcess) -> None:
    with pytest.raises(Exception, match="no token"):
        sim.command("AUTH some-token-of-enough-length")
    sim.command("STATS")  # the local, tokenless socket is unchanged


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--tcp", "1", "--listen-host", "10.0.0.1"], "give --token-file"),
        (["--tcp", "1", "--listen-host", "example.org"], "IPv4 or IPv6 address"),
        (["--tcp", "1", "--listen-host", "127.0.0.2", "--token-file", "/nonexistent"], "No such file"),
    ],
)
def test_unsafe_or_malformed_listeners_do_not_start(
    sim_binary: Path, tmp_path: Path, args: list[str], message: str
) -> None:
    r = subprocess.run(
        [str(sim_binary), "--socket", str(tmp_path / "x.sock"), *args], capture_output=True, text=True, timeout=30
    )
    assert r.returncode == 2 and message in r.stderr


def test_a_short_token_file_does_not_start(sim_binary: Path, tmp_path: Path) -> None:
    (tmp_path / "t").write_text("too-short\n")
    r = subprocess.run(
        [str(sim_binary), "--socket", str(tmp_path / "x.sock"), "--token-file", str(tmp_path / "t")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert r.returncode == 2 and "16..1024" in r.stderr


def test_an_ipv6_listener_serves_the_driver(sim_binary: Path, tmp_path: Path) -> None:
    token = secrets.token_urlsafe(24)
    (tmp_path / "t").write_text(token)
    with socket.socket(socket.AF_INET6) as s:
        s.bind(("::1", 0))
        port = int(s.getsockname()[1])
    proc = simulator.start(
        tmp_path / "v6.sock",
        "--tcp",
        str(port),
        "--listen-host",
        "::1",
        "--token-file",
        str(tmp_path / "t"),
        binary=sim_binary,
    )
    d = Driver({"address": f"tcp:[::1]:{port}", "agent_token": token})
    try:
        health = d.health()
        assert health.ok, health.detail
    finally:
        d.close()
        proc.stop()


# ---- the driver ---------------------------------------------------------------------------


def test_the_token_is_an_option_of_at_least_16_characters() -> None:
    NetfpgaOptions.parse({"address": "tcp:127.0.0.2:9000", "agent_token": "a" * 16})
    NetfpgaOptions.parse({"address": "unix:/run/card.sock", "agent_token": "a" * 16})
    for bad in ("a" * 15, "has a space in it ok", ""):
        with pytest.raises(OptionsError, match="agent_token"):
            NetfpgaOptions.parse({"address": "tcp:127.0.0.2:9000", "agent_token": bad})


@pytest.mark.parametrize("token", [None, "not-the-agents-token"])
def test_the_driver_without_the_right_token_is_told_to_set_it(agent: Agent, token: str | None) -> None:
    options = {"address": agent.address} | ({"agent_token": token} if token else {})
    d = Driver(options)
    try:
        with pytest.raises(OptionsError) as e:
            d.read_state()
        assert "agent_token" in e.value.hint
    finally:
        d.close()


def test_the_driver_with_a_token_against_a_tokenless_agent_is_told_so(sim: SimProcess) -> None:
    d = Driver({"address": sim.address, "agent_token": "a" * 16})
    try:
        with pytest.raises(OptionsError, match="does not take a token"):
            d.read_state()
    finally:
        d.close()


class TestNetfpgaAgentConformance(DriverConformance):
    """The core's conformance suite through the token-protected TCP agent. The faults and the
    traffic go through an authenticated connection of their own, as a test harness would."""

    @pytest.fixture
    def card(self, sim_binary: Path, tmp_path: Path) -> Iterator[list[Agent]]:
        agents = [_start(sim_binary, tmp_path, "--test-commands")]
        yield agents
        agents[-1].proc.stop()

    @pytest.fixture
    def driver(self, card: list[Agent]) -> Iterator[Driver]:
        d = Driver({"address": card[0].address, "agent_token": card[0].token})
        yield d
        d.close()

    @pytest.fixture
    def restart(self, card: list[Agent], sim_binary: Path) -> Callable[[], None]:
        def again() -> None:  # the same port and token file: the driver's options still hold
            first = card[0]
            card[-1].proc.stop()
            proc = simulator.start(Path(first.proc.address), *first.args, binary=sim_binary)
            card.append(Agent(proc, first.address, first.token, first.args))

        return again

    @pytest.fixture
    def inject_apply_failure(self, card: list[Agent]) -> Callable[[], None]:
        def fault() -> None:
            card[-1].authed("FAULT 10")

        return fault

    @pytest.fixture
    def traffic(self, card: list[Agent], conformance_pcap: Path) -> Callable[[], None]:
        def send() -> None:
            card[-1].authed(f"INJECT {conformance_pcap}")
            card[-1].authed("RUN")

        return send
