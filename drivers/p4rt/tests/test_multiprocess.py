"""Several portal processes drive one P4Runtime switch (#16: N API workers and a controller):
each has its own driver and session with the same options; a push takes over the primary
role (outbidding whoever holds it), every other process still reads, and the version a
process reports is what the switch holds, not what it pushed itself. Real OS processes
(portal_process.py) against the bundled target and simple_switch_grpc."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from bmv2_target.testing import Target

from sliceportal_p4rt.simple_switch import start_simple_switch_grpc

from .portal_process import versioned_ir

HELPER = Path(__file__).with_name("portal_process.py")


class Portal:
    """A portal process holding one driver; ``ask`` sends a command and waits for its answer."""

    def __init__(self, address: str) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, str(HELPER), address], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
        )

    def ask(self, **cmd: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.proc.stdin.write(json.dumps(cmd) + "\n")
        self.proc.stdin.flush()
        line = self.proc.stdout.readline()
        assert line, f"the portal process exited ({self.proc.poll()}) on {cmd}"
        answer: dict[str, Any] = json.loads(line)
        return answer

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()


@pytest.fixture(params=["bundled", pytest.param("simple_switch_grpc", marks=pytest.mark.needs_bmv2)])
def address(request: pytest.FixtureRequest, start_target: Callable[..., Target]) -> Iterator[str]:
    if request.param == "bundled":
        yield start_target("--priority-queues", "8").address
    else:
        with start_simple_switch_grpc(priority_queues=8) as switch:
            yield switch.address


@pytest.fixture
def portals(address: str) -> Iterator[Callable[[], Portal]]:
    started: list[Portal] = []

    def start() -> Portal:
        started.append(Portal(address))
        return started[-1]

    yield start
    for p in started:
        p.stop()


def pushed(p: Portal, k: int) -> dict[str, Any]:
    out = p.ask(op="push", k=k)
    assert out["ok"] and out["verified"], out
    assert out["version"] == versioned_ir(k).digest()
    return out


def test_two_processes_push_alternately_and_a_third_reconciles_in_sync(portals: Callable[[], Portal]) -> None:
    a, b, controller = portals(), portals(), portals()
    for k in range(6):
        writer, other = (a, b) if k % 2 == 0 else (b, a)
        out = pushed(writer, k)
        if k:
            # the rule on top is the change: the priorities the other process's push left are kept
            assert out["diff"] == {"added": 1, "removed": 0, "modified": 0}, out["diff"]
        # the other process knows the version by lowering it (a worker previewing), not by
        # having pushed it: what it reads is what the switch holds
        assert other.ask(op="lower", k=k)["version"] == out["version"]
        assert other.ask(op="read")["version"] == out["version"]
        assert writer.ask(op="read")["version"] == out["version"]
        # the controller reconciles with the plan as stored at deploy time: nothing to write
        report = controller.ask(op="reconcile", plan=out["plan"])
        assert report == {"in_sync": True, "found": out["version"], "pushed": False, "error": None}, report


def test_a_killed_or_hung_primary_blocks_no_one(portals: Callable[[], Portal]) -> None:
    a, b, controller = portals(), portals(), portals()
    pushed(a, 0)  # a is primary now, and stays connected
    a.proc.kill()
    a.proc.wait()
    out = pushed(b, 1)
    assert controller.ask(op="reconcile", plan=out["plan"])["in_sync"]
    # a process that hangs while primary keeps its stream open: the next writer outbids it
    os.kill(b.proc.pid, signal.SIGSTOP)
    try:
        c = portals()
        out = pushed(c, 2)
        assert out["diff"] == {"added": 1, "removed": 0, "modified": 0}, out["diff"]
    finally:
        os.kill(b.proc.pid, signal.SIGCONT)
    # b comes back believing it was primary: it finds out, outbids, and diffs against what
    # the switch holds (c's push), not against what it wrote itself
    out = pushed(b, 3)
    assert out["diff"] == {"added": 1, "removed": 0, "modified": 0}, out["diff"]
    assert controller.ask(op="reconcile", plan=out["plan"])["in_sync"]
    assert c.ask(op="read")["version"] is None  # c never lowered version 3: it cannot name it
    c.ask(op="lower", k=3)
    assert c.ask(op="read")["version"] == out["version"]
