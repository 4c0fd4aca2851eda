"""p4runtime-shell (ADR 0003) as an independent client of what the driver wrote, against the real
simple_switch_grpc: the session ``sliceportal p4rt shell`` starts (``sliceportal_p4rt.shell``),
fed on stdin as a script would feed it, in its own virtualenv (protobuf 3.20, the PyPI ``p4``
bindings: no code of ours on its side). It reads back every entry the driver wrote; its default
session is refused writes, in the client and by the switch; a ``--write`` session is primary
until the portal's next push outbids it.
"""

from __future__ import annotations

import dataclasses
import json
import queue
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from irs import two_tenants
from p4.v1 import p4runtime_pb2

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, Ternary
from sliceportal_p4rt.client import read_once
from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.p4info import CLASSIFIER, EGRESS_VLAN
from sliceportal_p4rt.shell import ShellSession, shell_session
from sliceportal_p4rt.simple_switch import ServerTls, start_simple_switch_grpc
from sliceportal_p4rt.tls import Tls
from sliceportal_testbed.tls import issue_p4runtime_certs

pytestmark = [pytest.mark.needs_bmv2, pytest.mark.needs_p4runtime_shell]

DEADLINE_S = 60.0  # one shell start is ~1 s here; CI's loaded two cores get room

# Runs inside p4runtime-shell (``%run -i``: its names table_entry and p4info), on its own
# protobuf: each table's entries as the driver's plans write them, {field: [value, mask]}.
READBACK = """
import json

def _as_plan(fm, info):
    kind = fm.WhichOneof("field_match_type")
    value = int.from_bytes(getattr(fm, kind).value, "big")
    if kind == "exact":
        return [value, (1 << info.bitwidth) - 1]
    if kind == "ternary":
        return [value, int.from_bytes(fm.ternary.mask, "big")]
    if kind == "lpm":
        return [value, ((1 << fm.lpm.prefix_len) - 1) << (info.bitwidth - fm.lpm.prefix_len)]
    raise ValueError(kind)

_out = {}
for _t in p4info.tables:
    _fields = {m.id: m for m in _t.match_fields}
    _out[_t.preamble.name] = [
        {
            "match": {_fields[f.field_id].name: _as_plan(f, _fields[f.field_id]) for f in _e.msg().match},
            "priority": _e.msg().priority,
            "metadata": _e.msg().metadata.decode(),
        }
        for _e in table_entry[_t.preamble.name].read()
    ]
print("READBACK " + json.dumps(_out))
"""


@pytest.fixture
def switch() -> Iterator[str]:
    with start_simple_switch_grpc(priority_queues=8) as sw:
        yield sw.address


@pytest.fixture
def driver(switch: str) -> Iterator[Driver]:
    d = Driver({"address": switch, "lanes": 8})
    yield d
    d.close()


def rule_set(k: int) -> RuleIR:
    """Two tenants with rate-limited slices and ``k`` more classifier rules."""
    base = two_tenants(qos=Qos(rate_bps=10_000_000, burst_ms=10, ecn_ms=5))
    extra = tuple(
        Rule(Match(vni=Ternary.exact(1001, 24), dst_port=Ternary.exact(7000 + j, 16)), Action(1, 6, 0), f"r{j}")
        for j in range(k)
    )
    return dataclasses.replace(base, rules=extra + base.rules)


class Shell:
    """A p4runtime-shell process fed on stdin, its output gathered by a thread."""

    def __init__(self, session: ShellSession, argv: Sequence[str] | None = None) -> None:
        self.proc = subprocess.Popen(
            list(argv or session.argv),
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
            text=True,
            pass_fds=session.fds,
        )
        session.close()  # the child holds its copies of the TLS memfds
        self.lines: queue.Queue[str | None] = queue.Queue()
        self.seen: list[str] = []
        self._marks = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put(None)

    def run(self, *commands: str) -> str:
        """Send the commands, then wait (with a deadline) for the output of a marker after them."""
        assert self.proc.stdin is not None
        self._marks += 1
        mark = f"MARK-{self._marks}"
        self.proc.stdin.write("".join(f"{c}\n" for c in commands) + f"print('{mark}')\n")
        self.proc.stdin.flush()
        out: list[str] = []
        deadline = time.monotonic() + DEADLINE_S
        while not any(mark in line for line in out):
            try:
                line = self.lines.get(timeout=max(0.0, deadline - time.monotonic()))
            except queue.Empty:
                raise AssertionError(f"no {mark} within {DEADLINE_S} s: {''.join(self.seen + out)}") from None
            if line is None:
                raise AssertionError(f"the shell exited ({self.proc.wait()}): {''.join(self.seen + out)}")
            out.append(line)
        self.seen += out
        return "".join(out)

    def close(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()  # EOF: IPython asks to exit, EOF again, and p4runtime-shell tears down
        try:
            self.proc.wait(timeout=DEADLINE_S)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()
            raise AssertionError(f"the shell did not exit at EOF: {''.join(self.seen)}") from None


@contextmanager
def shell(session: ShellSession, argv: Sequence[str] | None = None) -> Iterator[Shell]:
    sh = Shell(session, argv)
    try:
        yield sh
    finally:
        if sh.proc.poll() is None:
            sh.proc.kill()
            sh.proc.wait()


def readback(sh: Shell, tmp_path: Path) -> dict[str, list[dict[str, Any]]]:
    script = tmp_path / "readback.py"
    script.write_text(READBACK)
    out = sh.run(f"%run -i {script}")
    line = next((x for x in out.splitlines() if "READBACK " in x), None)
    assert line is not None, out
    tables: dict[str, list[dict[str, Any]]] = json.loads(line.split("READBACK ", 1)[1])
    return tables


def as_set(entries: Sequence[dict[str, Any]]) -> set[tuple[Any, ...]]:
    return {(tuple(sorted((k, tuple(v)) for k, v in e["match"].items())), e["priority"]) for e in entries}


def egress_vlan_entry(port: int) -> list[str]:
    """Commands that insert an egress_vlan entry for ``port`` (no owner tag: not the driver's)."""
    return [
        f"te = table_entry['{EGRESS_VLAN}'](action='push_tenant_vlan')",
        f"te.match['egress_port'] = '{port}'",
        "te.insert()",
    ]


def egress_ports(driver: Driver, address: str) -> set[int]:
    """Every egress_vlan entry's port, whoever wrote it (the driver reads back only its own)."""
    e = p4runtime_pb2.Entity()
    e.table_entry.table_id = driver.p4info.table(EGRESS_VLAN).preamble.id
    held = read_once(address, 1, [e], timeout_s=10)
    return {int.from_bytes(x.table_entry.match[0].exact.value, "big") for x in held}


def test_the_shell_reads_back_every_entry_the_driver_wrote(switch: str, driver: Driver, tmp_path: Path) -> None:
    plan = driver.lower(rule_set(40))
    driver.apply(plan, lambda _: None)
    session = shell_session(driver.opts.model_dump())
    assert not session.write and session.election_id == 0 and "read-only backup" in session.describe()
    with shell(session) as sh:
        held = readback(sh, tmp_path)
        sh.close()
    assert "You are not the primary client" in "".join(sh.seen)  # the switch said: backup
    written = {t.preamble.name for t in driver.p4info.proto.tables}
    assert set(held) == written
    counts = {}
    for name in written:
        ours = [e for e in plan.tables.get(name, []) if not e.get("default")]
        assert as_set(held[name]) == as_set(ours), name
        assert len(held[name]) == len(ours) and all(e["metadata"] == "sliceportal" for e in held[name]), name
        counts[name] = len(ours)
    # what the comparison covered: the 40 rules beside two tenants' entries, and the QoS table
    assert counts["SlicingIngress.classifier.classifier"] == 44 and counts["SlicingIngress.vqueue.slice_qos"] > 0
    assert sum(counts.values()) > 50


def test_the_default_session_is_refused_writes(switch: str, driver: Driver) -> None:
    plan = driver.lower(rule_set(0))
    driver.apply(plan, lambda _: None)
    before = egress_ports(driver, switch)
    session = shell_session(driver.opts.model_dump())
    with shell(session) as sh:
        out = sh.run(*egress_vlan_entry(9))
        sh.close()
    assert "read-only session: nothing was sent" in out
    # the same session without the client's refusal: the switch refuses it, its election id
    # being below the driver's (the portal is primary)
    session = shell_session(driver.opts.model_dump())
    with shell(session, [a for a in session.argv if a != "--read-only"]) as sh:
        out = sh.run(*egress_vlan_entry(9))
        sh.close()
    assert "PERMISSION_DENIED" in out and "read-only session" not in out
    assert egress_ports(driver, switch) == before and 9 not in before
    assert driver.read_state().tables == plan.tables


def test_a_write_session_is_primary_until_the_portal_pushes(switch: str, driver: Driver) -> None:
    driver.apply(driver.lower(rule_set(0)), lambda _: None)
    session = shell_session(driver.opts.model_dump(), write=True)
    assert session.write and session.election_id >= 1 << 64 and "primary" in session.describe()
    with shell(session) as sh:
        out = sh.run(*egress_vlan_entry(9))
        assert "You are not the primary client" not in "".join(sh.seen) and "Error" not in out, out
        assert 9 in egress_ports(driver, switch)
        # the portal's next push outbids the shell, which stays connected
        plan = driver.lower(rule_set(3))
        driver.apply(plan, lambda _: None)
        out = sh.run(*egress_vlan_entry(10))
        assert "PERMISSION_DENIED" in out, out
        sh.close()
    assert driver.read_state().tables == plan.tables
    # the shell's entry stays (the driver never touches entries without its tag); the refused one is not there
    assert 9 in (ports := egress_ports(driver, switch)) and 10 not in ports


def test_over_mutual_tls_the_key_reaches_the_shell_in_memory_only(tmp_path: Path) -> None:
    """The backend's PEM options go to the shell as /dev/fd/N of memfds (argv names no secret and
    no file is written); tls_server_name reaches gRPC: a name the certificate lacks fails."""
    certs = issue_p4runtime_certs(tmp_path)
    server = ServerTls(certs.server_cert, certs.server_key, certs.ca_cert, client_auth=True)
    client = Tls(certs.ca_cert.read_bytes(), certs.client_cert.read_bytes(), certs.client_key.read_bytes())
    with start_simple_switch_grpc(priority_queues=8, server_tls=server, client_tls=client) as sw:
        options = {"address": sw.address, "lanes": 8, **certs.client_options(), "tls_server_name": "localhost"}
        driver = Driver(options)
        try:
            plan = driver.lower(rule_set(5))
            driver.apply(plan, lambda _: None)
        finally:
            driver.close()
        session = shell_session(options)
        assert session.tls and "/dev/fd/" in " ".join(session.argv) and "--server-name" in session.argv
        assert "PRIVATE KEY" not in " ".join(session.argv) and len(session.fds) == 3
        with shell(session) as sh:
            held = readback(sh, tmp_path)
            sh.close()
        assert as_set(held[CLASSIFIER]) == as_set([e for e in plan.tables[CLASSIFIER] if not e.get("default")])

        wrong = shell_session({**options, "tls_server_name": "elsewhere.example"})
        try:
            done = subprocess.run(
                wrong.argv, input="", capture_output=True, text=True, timeout=DEADLINE_S, pass_fds=wrong.fds
            )
        finally:
            wrong.close()
        assert done.returncode != 0 and "Hostname Verification Check failed" in done.stderr, done.stderr
