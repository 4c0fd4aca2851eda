"""KPIs from the XDP agent's own counters, without the testbed (#25): ``python -m
sliceportal_xdp.agent`` attached to a veth this test creates, registered through the API as an
operator does (driver "xdp", the agent's address and token), a slice deployed, traffic
replayed by ``tcpreplay`` at a known rate, the KPI collector as the controller runs it.

Checked: samples (source 'counters') within 5 s; the offered load within ±5 % of the replay
rate; the loss equal to the drops the program counted, by cause (its slice rate limiter); and
what the plane cannot measure stays unmeasured: XDP sees a frame once, before any queue, so
the samples carry no queueing delay (None, "not measured by this data plane", never 0) and
their delivered count is what entered less what the program dropped (it counts no egress).
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from contextlib import closing
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal_testbed.processes import free_port
from sliceportal_testbed.veths import veth_pairs
from sliceportal_xdp.agent_client import AgentClient
from sliceportal_xdp.driver import Driver
from tests.kpi.collector_helpers import check_counted, deploy_and_replay, need_root

pytestmark = [pytest.mark.slow, pytest.mark.needs_root]

PPS = 400
REPLAY_S = 6
RATE_LIMIT_MBPS = 1.0  # about half the offered ~1.9 Mbit/s: the slice's token bucket drops the rest


def test_xdp_agent_counters_become_kpis(client: TestClient, session: Session, db_url: str, tmp_path: Path) -> None:
    need_root()
    tag = f"kx{os.getpid() % 10000}"
    wire, dut = f"{tag}w", f"{tag}d"  # tcpreplay sends into wire; the agent's program is on dut
    backend = f"test-spa-{tag}"  # test_agent.remove_stale_test_pins clears what a killed run leaves
    token = os.urandom(24).hex()
    (tmp_path / "token").write_text(token)
    port = free_port()
    options = {"overload_poll_s": 0, "tx_peer": wire, "alt_mac": "02:00:00:00:aa:01", "alt_ip": "10.99.0.1"}
    argv = [
        sys.executable,
        "-m",
        "sliceportal_xdp.agent",
        "--backend",
        backend,
        "--interface",
        dut,
        "--options",
        json.dumps(options),
    ]
    with veth_pairs((wire, dut)):
        agent = subprocess.Popen(
            [*argv, "--listen", f"127.0.0.1:{port}", "--token-file", str(tmp_path / "token")], stderr=subprocess.PIPE
        )
        try:
            with closing(AgentClient(f"http://127.0.0.1:{port}", token, 5.0, retry_s=0.5)) as ready:
                ready.wait_ready(60, lambda: _alive(agent))
            reg = {"address": f"127.0.0.1:{port}", "agent_token": token}
            # the program's own counters through the agent, beside the portal's
            run = deploy_and_replay(
                client, session, db_url, tmp_path, Driver, "xdp", reg, RATE_LIMIT_MBPS, wire, PPS, REPLAY_S
            )
        finally:
            agent.kill()
            agent.wait()
            down = subprocess.run([*argv, "--teardown"], capture_output=True, text=True, timeout=60)
            assert down.returncode == 0, down.stderr

    assert set(run.plane_drops()) == {"rate_limit"}, "the token bucket should drop: ~twice the limit is offered"
    check_counted(run)
    lane, _ = run.lane()
    assert lane.tx_packets is None and lane.delay is None  # the program counts no egress, measures no queue
    for x in run.samples:
        assert x.delay_mean_ms is None and x.delay_p50_ms is None and x.delay_p99_ms is None
        # delivered: what entered less what the program dropped (no egress count to take it from)
        assert x.rx_packets == x.tx_packets - sum(x.drops.values())
        assert x.rx_bytes == x.tx_bytes  # no egress bytes either: throughput falls back to what entered


def _alive(proc: subprocess.Popen[bytes]) -> None:
    """Raise at once when the agent under test has exited (AgentClient.wait_ready's check)."""
    if proc.poll() is not None:
        raise AssertionError(f"the agent exited: {proc.stderr.read().decode() if proc.stderr else ''}")
