"""The XDP agent (#16 item 2): the data plane pinned in bpffs outlives the agent and its
clients. A driver in agent mode pushes through the agent; the agent is killed with SIGKILL
while traffic crosses the veth testbed, and every packet is still forwarded and
classified (counted by UDP sockets on core and alt, and by the program's counters read
through the next agent, which takes the pins over with the same digest and version)."""

from __future__ import annotations

import fcntl
import json
import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import httpx
import pytest

from sliceportal.drivers.contract import DriverError, OptionsError
from sliceportal.drivers.push import reconcile_once
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Flow, Underlay, build_bytes, payload
from sliceportal_testbed import Testbed
from sliceportal_testbed.processes import free_port
from sliceportal_xdp import pins
from sliceportal_xdp.agent import LOCK_DIR
from sliceportal_xdp.agent_client import AgentClient
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.positions import rule_positions

from .conftest import noop
from .test_live import BULK_LANE, PRIO_LANE, drain, listener, seed001_ir

TEIDS = [100 + s for s in range(16)] + [999]  # 8 prioritised, 8 bulk, 999 a miss
PAYLOAD = 64


def _alive(proc: subprocess.Popen[bytes] | None) -> None:
    """Raise at once when the agent under test has exited (AgentClient.wait_ready's check)."""
    if proc is not None and proc.poll() is not None:
        raise AssertionError(f"agent exited: {proc.stderr.read().decode() if proc.stderr else ''}")


def agent_argv(backend: str, *args: str) -> list[str]:
    """The XDP agent's command line for ``backend``."""
    return [sys.executable, "-m", "sliceportal_xdp.agent", "--backend", backend, *args]


@dataclass
class Bed:
    tb: Testbed
    backend: str
    token: str
    token_file: Path
    agent_options: dict[str, object]
    url: str = ""
    proc: subprocess.Popen[bytes] | None = None
    started: list[subprocess.Popen[bytes]] = field(default_factory=list)

    def argv(self, *extra: str) -> list[str]:
        core = self.tb["core"]
        options = json.dumps(self.agent_options)
        return agent_argv(self.backend, "--interface", core.ifname, "--netns", core.netns, "--options", options, *extra)

    def start_agent(self, *extra: str, port: int | None = None) -> None:
        port = port or free_port()
        self.url = f"http://127.0.0.1:{port}"
        self.proc = subprocess.Popen(
            self.argv("--listen", f"127.0.0.1:{port}", "--token-file", str(self.token_file), *extra),
            stderr=subprocess.PIPE,
        )
        self.started.append(self.proc)
        client = AgentClient(self.url, self.token, 5.0, retry_s=0.5)
        try:
            client.wait_ready(60, lambda: _alive(self.proc))
        finally:
            client.close()

    def driver(self, token: str | None = None) -> Driver:
        return Driver(
            {"address": self.url.removeprefix("http://"), "agent_token": token or self.token, "agent_timeout_s": 20}
        )

    def kill9(self) -> None:
        assert self.proc is not None
        self.proc.send_signal(signal.SIGKILL)
        self.proc.wait()


def remove_stale_test_pins() -> None:
    """Pins left by a test run that was killed (its agent gone: the backend's lock is free)."""
    root = Path(pins.ROOT)
    for d in sorted(root.iterdir()) if root.is_dir() else []:
        if not d.name.startswith(("test-spa", "conformance-")):
            continue
        lock = Path(LOCK_DIR) / f"xdp-agent-{d.name}.lock"
        with lock.open("a+b") as f:
            try:
                fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                continue  # a live agent (another session's test) holds it
            pins.remove(str(d))
        lock.unlink(missing_ok=True)


@pytest.fixture(scope="module")
def bed(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Bed]:
    tmp = tmp_path_factory.mktemp("agent")
    token = os.urandom(24).hex()
    token_file = tmp / "token"
    token_file.write_text(token + "\n")
    remove_stale_test_pins()
    with Testbed(f"spa{os.getpid() % 100000}-") as tb:
        core, alt = tb["core"], tb["alt"]
        options: dict[str, object] = {
            "tx_peer": f"{tb['edge'].netns}/{tb.peer_port('core')}",
            "alt_mac": alt.mac,
            "alt_ip": alt.ip,
            "alt_lanes": [BULK_LANE],
            "lane_cpus": {str(PRIO_LANE): 1 % (os.cpu_count() or 1)},
            "overload_poll_s": 0,
        }
        b = Bed(tb, f"test-{core.netns}", token, token_file, options)
        try:
            b.start_agent()
            yield b
        finally:
            for p in b.started:
                if p.poll() is None:
                    p.kill()
                    p.wait()
            down = subprocess.run(b.argv("--teardown"), capture_output=True, text=True)
            assert down.returncode == 0, down.stderr
            assert not os.path.exists(pins.pin_dir(b.backend))


def templates(tb: Testbed) -> dict[int, bytearray]:
    """One frame per TEID; the sequence number is patched in per send (scapy builds one
    frame in ~7 ms: too slow to build each). The outer UDP checksum is zeroed (valid for
    IPv4), so the patched frames stay acceptable to the receiving sockets."""
    edge, core = tb["edge"], tb["core"]
    u = Underlay(src_mac=edge.mac, dst_mac=core.mac, outer_src=edge.ip, outer_dst=core.ip)
    out = {}
    for teid in TEIDS:
        flow = Flow("10.45.0.1", "10.60.0.1", 5000, teid=teid, vni=7)
        f = bytearray(build_bytes(flow, payload(teid, 0, 0, PAYLOAD), u))
        f[14 + 20 + 6 : 14 + 20 + 8] = b"\0\0"  # Ethernet, IPv4 without options, UDP checksum
        out[teid] = f
    return out


class Traffic:
    """Rounds of one frame per TEID every ``period_s`` from edge, received on core and alt."""

    def __init__(self, tb: Testbed, period_s: float = 0.01) -> None:
        self.tb, self.period_s = tb, period_s
        self.frames = templates(tb)
        self.sent: dict[int, int] = {}  # teid -> frames
        self.seen: dict[str, set[int]] = {"core": set(), "alt": set()}
        self._stop = threading.Event()
        self._socks = {role: listener(tb[role].netns) for role in self.seen}
        self._threads = [threading.Thread(target=self._recv, args=(r,), daemon=True) for r in self.seen]
        for t in self._threads:
            t.start()

    def _recv(self, role: str) -> None:
        while not self._stop.is_set():
            self.seen[role] |= drain(self._socks[role], settle_s=0.05)

    def send(self, duration_s: float, stop: threading.Event | None = None) -> None:
        end, seq = time.monotonic() + duration_s, max(self.sent.values(), default=0)
        while time.monotonic() < end and not (stop and stop.is_set()):
            seq += 1
            batch = []
            for f in self.frames.values():
                f[-PAYLOAD + 6 : -PAYLOAD + 14] = seq.to_bytes(8, "big")  # PAYLOAD_HEADER "!HIQQ": seq after magic, id
                batch.append(bytes(f))
            self.tb.send("edge", batch)
            for teid in self.frames:
                self.sent[teid] = seq
            time.sleep(self.period_s)

    def expected(self, teids: list[int]) -> set[int]:
        return {t * 1_000_000 + q for t in teids for q in range(1, self.sent[t] + 1)}

    def close(self, settle_s: float = 1.0) -> None:
        time.sleep(settle_s)
        self._stop.set()
        for t in self._threads:
            t.join()
        for s in self._socks.values():
            s.close()


@pytest.mark.needs_root
def test_agent_sigkill_keeps_forwarding_and_is_taken_over(bed: Bed) -> None:
    d = bed.driver()
    try:
        ir = seed001_ir()
        pushed = d.apply(d.lower(ir), noop)
        h0 = AgentClient(bed.url, bed.token, 10).agent_health()
        assert (h0.version, h0.adopted) == (pushed.version, False)
        before = d.counters()
        traffic = Traffic(bed.tb)
        sender = threading.Thread(target=traffic.send, args=(5.0,))
        sender.start()
        time.sleep(1.0)
        bed.kill9()  # no agent from here until the next one is up: the program keeps running
        t_kill = time.monotonic()
        bed.start_agent(port=int(bed.url.rpartition(":")[2]))  # where the portal's driver expects it
        gap_s = time.monotonic() - t_kill
        sender.join()
        traffic.close()
        prio, rest = TEIDS[:8], TEIDS[8:]
        assert min(traffic.sent.values()) > 100
        # every frame sent while the agent was dead or being replaced arrived, classified
        assert traffic.seen["core"] == traffic.expected(prio), f"agent gap {gap_s:.1f} s"
        assert traffic.seen["alt"] == traffic.expected(rest), f"agent gap {gap_s:.1f} s"

        d2 = d  # the portal's driver object outlives the agent: it reconnects (retries)
        h1 = AgentClient(bed.url, bed.token, 10).agent_health()
        assert h1.adopted and h1.version == pushed.version and h1.generation == h0.generation
        assert h1.program_id != h0.program_id  # a new program, the same maps
        state = d2.read_state()
        assert state.version == pushed.version and len(state.tables["actions"]) == 16
        after = d2.counters()
        for rule, teid in enumerate(TEIDS[:16]):  # rule i matches TEID 100 + i
            got = after.rules[rule].packets - before.rules[rule].packets
            assert got == traffic.sent[teid], f"rule {rule}"
        steered = sum(
            after.lanes[f"{p}/{PRIO_LANE}"].packets - before.lanes[f"{p}/{PRIO_LANE}"].packets for p in range(8)
        )
        assert steered == 8 * traffic.sent[TEIDS[0]]

        # a push after the takeover works and switches the copy
        ir2 = RuleIR(lanes=4, paths=8, rules=ir.rules[:8], miss=MissPolicy(MissMode.FIXED, lane=1, rr_path=0))
        pushed2 = d2.apply(d2.lower(ir2), noop)
        assert d2.read_state().version == pushed2.version != pushed.version
        h2 = AgentClient(bed.url, bed.token, 10).agent_health()
        assert (h2.version, h2.generation) == (pushed2.version, h1.generation + 1)
    finally:
        d.close()


DRIVER_SCRIPT = """
import json, sys
from pathlib import Path
from sliceportal.drivers.contract import NativePlan
from sliceportal_xdp.driver import Driver
url, token, what = sys.argv[1:4]
d = Driver({"address": url.removeprefix("http://"), "agent_token": token})
if what != "read":
    plan = NativePlan.model_validate_json(Path(what).read_text())
    print(json.dumps({"version": d.apply(plan, lambda e: None).version}))
else:
    s = d.read_state()
    print(json.dumps({"version": s.version, "rules": len(s.tables["actions"]), "health": d.health().version}))
d.close()
"""


def run_portal_process(bed: Bed, what: str) -> dict[str, object]:
    """A separate process using the driver against the agent, as a portal worker would:
    ``what`` is "read" or the file of a plan to push."""
    out = subprocess.run(
        [sys.executable, "-c", DRIVER_SCRIPT, bed.url, bed.token, what], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 0, out.stderr
    result: dict[str, object] = json.loads(out.stdout)
    return result


ROUNDS = 50  # frames per TEID that cross the data plane while, and after, the portal restarts


@pytest.mark.needs_root
def test_portal_restart_while_traffic_runs(bed: Bed, tmp_path: Path) -> None:
    plan = bed.driver().lower(seed001_ir())
    plan_file = tmp_path / "plan.json"
    plan_file.write_text(plan.model_dump_json())
    traffic, done = Traffic(bed.tb), threading.Event()
    sender = threading.Thread(target=traffic.send, args=(120.0, done))
    sender.start()
    try:
        # the held rule set (the previous test's) and this one send every TEID to the same
        # node, so the push mid-traffic changes no packet's destination
        pushed = run_portal_process(bed, str(plan_file))  # that process exits: the "portal" is gone
        read = run_portal_process(bed, "read")  # a new one reads what the data plane holds
        # the traffic goes on until enough rounds crossed (two quick portal processes can be over
        # in well under a second: CI once saw 38 rounds sent in all)
        deadline = time.monotonic() + 30
        while min(traffic.sent.values(), default=0) <= ROUNDS:
            assert time.monotonic() < deadline, f"the sender sent {traffic.sent} rounds in 30 s"
            time.sleep(0.05)
    finally:
        done.set()
        sender.join()
        traffic.close()
    assert pushed == {"version": plan.version}
    assert read == {"version": plan.version, "rules": 16, "health": plan.version}
    assert min(traffic.sent.values()) > ROUNDS
    assert traffic.seen["core"] == traffic.expected(TEIDS[:8])
    assert traffic.seen["alt"] == traffic.expected(TEIDS[8:])


@pytest.mark.needs_root
def test_after_an_agent_restart_a_new_portal_driver_keeps_the_rule_positions(bed: Bed) -> None:
    """Issue #14 item 4 across restarts: what lowering keeps comes from the pinned maps
    (through the new agent), not from the memory of the process that pushed."""
    ir = seed001_ir()
    d = bed.driver()
    try:
        d.apply(d.lower(ir), noop)
        held = rule_positions(d.read_state().tables)
    finally:
        d.close()
    bed.kill9()
    bed.start_agent(port=int(bed.url.rpartition(":")[2]))
    added = Rule(Match(teid=Ternary.exact(4242, 32)), Action(1, BULK_LANE, 0))
    fresh = bed.driver()  # a portal process that never pushed
    try:
        plan = fresh.lower(
            RuleIR(lanes=ir.lanes, paths=ir.paths, rules=(*ir.rules[:8], added, *ir.rules[8:]), miss=ir.miss)
        )
        got = rule_positions(plan.tables)
        assert got[:8] == held[:8] and got[9:] == held[8:] and held[7] < got[8] < held[8]
        r = fresh.apply(plan, noop)
        # the slots it differs in from the live copy: its TEID, its action, the wildcard sets
        # it is in, meta (the idle copy written also catches up on the version before)
        assert 0 < r.added + r.removed + r.modified <= 16
    finally:
        fresh.close()


@pytest.mark.needs_root
def test_wrong_token_is_refused_and_changes_nothing(bed: Bed) -> None:
    d = bed.driver()
    before = d.read_state()
    ir = seed001_ir()
    plan = d.lower(RuleIR(lanes=4, paths=8, rules=ir.rules[:4], miss=ir.miss))
    assert plan.version != before.version
    for headers in ({"Authorization": "Bearer " + "x" * len(bed.token)}, {}):
        r = httpx.post(f"{bed.url}/v1/apply", content=plan.model_dump_json(), headers=headers, timeout=10)
        assert r.status_code == 401
        # the fault-injection hook exists only on an agent started with --test-hooks
        hook = httpx.post(
            f"{bed.url}/v1/test/inject-write-failure", headers={"Authorization": f"Bearer {bed.token}"}, timeout=10
        )
        assert hook.status_code == 404
    with pytest.raises(DriverError, match="takes no fault injection"):
        d.inject_write_failure(1)
        assert r.headers["www-authenticate"] == "Bearer"
        assert r.headers["content-type"].startswith("application/problem+json")
    wrong = bed.driver(token="y" * 32)
    with pytest.raises(OptionsError, match="refused the token"):
        wrong.apply(plan, noop)
    assert d.read_state() == before
    # a malformed plan: the driver's own error, as a problem, and nothing changes
    bad = plan.model_copy(update={"tables": {k: v for k, v in plan.tables.items() if k != "qos"}})
    with pytest.raises(DriverError, match=r"plan lacks tables \['qos'\]"):
        d.apply(bad, noop)
    assert d.read_state() == before
    d.close()
    assert d.read_state() == before  # usable again after close(), as the in-process driver is
    d.close()
    wrong.close()


@pytest.mark.needs_root
def test_the_agent_serves_no_schema_or_docs_to_a_caller_without_its_token(bed: Bed) -> None:
    # issue #27: /openapi.json listed every route and body of the agent to anyone who connected
    for path in ("/openapi.json", "/docs", "/redoc", "/docs/oauth2-redirect"):
        r = httpx.get(bed.url + path, timeout=10)
        assert r.status_code in (401, 404), (path, r.status_code)
        assert "/v1/apply" not in r.text
    authorised = httpx.get(bed.url + "/v1/health", headers={"Authorization": f"Bearer {bed.token}"}, timeout=10)
    assert authorised.status_code == 200


def attached_prog(bed: Bed) -> int:
    core = bed.tb["core"]
    out = subprocess.run(["ip", "-n", core.netns, "-j", "link", "show", core.ifname], capture_output=True, text=True)
    return int(json.loads(out.stdout)[0]["xdp"]["prog"]["id"])


@pytest.mark.needs_root
def test_one_agent_per_backend_incompatible_builds_refused_replace_and_reconcile(bed: Bed) -> None:
    d = bed.driver()
    expected = d.lower(seed001_ir())
    d.apply(expected, noop)
    assert reconcile_once(d, expected).in_sync  # the reconciler reads back through the agent
    held = d.read_state()
    abi, prog = pins.read_abi(pins.pin_dir(bed.backend)), attached_prog(bed)

    def another(options: dict[str, object], *extra: str) -> subprocess.CompletedProcess[str]:
        argv = [a if a != json.dumps(bed.agent_options) else json.dumps(options) for a in bed.argv()]
        return subprocess.run(
            [*argv, "--listen", f"127.0.0.1:{free_port()}", "--token-file", str(bed.token_file), *extra],
            capture_output=True,
            text=True,
            timeout=60,
        )

    assert bed.proc is not None
    second = another(bed.agent_options)
    assert second.returncode == 2 and f"another agent (pid {bed.proc.pid}) holds backend" in second.stderr
    bed.proc.terminate()  # a clean stop leaves the data plane attached, like a crash
    assert bed.proc.wait(timeout=30) in (0, -signal.SIGTERM)  # uvicorn re-raises the signal
    # another table size is another map shape: the pinned maps cannot be taken over ...
    other = dict(bed.agent_options, capacity={"teid": 4096})
    refused = another(other)
    assert refused.returncode == 2, refused.stderr
    assert "holds a data plane of another build" in refused.stderr and "--replace" in refused.stderr
    # ... and nothing changed: the same pins, the same program attached
    assert pins.read_abi(pins.pin_dir(bed.backend)) == abi and attached_prog(bed) == prog
    # an upgrade with another map shape: --replace starts the data plane empty ...
    bed.agent_options = other
    bed.start_agent("--replace", port=int(bed.url.rpartition(":")[2]))
    assert pins.read_abi(pins.pin_dir(bed.backend)) != abi
    assert d.read_state().version is None and held.version == expected.version
    # ... and the reconciler, reading back through the agent, notices and re-pushes
    report = reconcile_once(d, d.lower(seed001_ir()))
    assert report.reachable and report.restarted_empty and report.repaired, report
    assert reconcile_once(d, d.lower(seed001_ir())).in_sync
    assert d.health().version == expected.version
    d.close()


@pytest.mark.parametrize(
    ("options", "field"),
    [
        ({"address": "10.0.0.7", "agent_token": "t" * 16}, "address"),  # no port
        ({"address": "agent.example:7700", "agent_token": "t" * 16}, "address"),  # names are not resolved
        ({"address": "unix:/run/../x.sock", "agent_token": "t" * 16}, "address"),
        ({"address": "127.0.0.1:7700"}, "agent_token"),
        ({"address": "127.0.0.1:7700", "agent_token": "short"}, "agent_token"),
        ({"address": "127.0.0.1:7700", "agent_token": "t" * 16, "interface": "eth0"}, "interface"),
        ({"pin_name": "../x"}, "pin_name"),
    ],
)
def test_agent_options_are_checked_before_anything_runs(options: dict[str, object], field: str) -> None:
    with pytest.raises(OptionsError, match=field):
        Driver(options)


def test_agent_address_forms() -> None:
    for address, url in (
        ("tcp:127.0.0.1:7700", "http://127.0.0.1:7700"),
        ("10.0.0.7:80", "http://10.0.0.7:80"),
        ("unix:/run/sliceportal/xdp.sock", "unix:/run/sliceportal/xdp.sock"),
    ):
        d = Driver({"address": address, "agent_token": "t" * 16})
        assert d._agent is not None and d._agent.url == url
        d.close()


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--options", '{"address": "127.0.0.1:1"}'], "--options may not set address"),
        (["--options", "{bad"], "--options is not JSON"),
        (["--backend", "../x"], "pin_name"),
    ],
)
def test_agent_refuses_bad_arguments_before_touching_anything(
    argv: list[str], message: str, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    from sliceportal_xdp.agent import main

    base = ["--backend", "never-loaded", "--token-file", str(tmp_path / "token")]
    assert main([*base, *argv]) == 2
    assert message in capsys.readouterr().err
    assert not os.path.exists(pins.pin_dir("never-loaded"))
