"""What the "collector without the testbed" tests of every plane share (#25): veths the test
creates, a pcap of one slice's uplink flow, registration and deployment through the API as an
operator does it, a ``tcpreplay`` at a known rate while the real ``KpiCollector`` runs, and the
checks every plane must pass (samples within 5 s, offered load within ±5 % of the replay rate,
loss equal to the drops the plane itself counted, by cause).

Each test adds what its plane measures beyond that (delay, or ``None``: "not measured").
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections import Counter as Tally
from collections.abc import Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from fastapi.testclient import TestClient
from scapy.utils import PcapWriter
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.core.db import session_factory
from sliceportal.drivers.contract import Counters, LaneCounters
from sliceportal.kpi.collector import KpiCollector
from sliceportal.models import Backend, KpiSample, Role
from sliceportal.services.backends import POOL, pooled_counters
from sliceportal.traffic.packets import Flow, build
from tests.factories import add_backend, add_slice, add_tenant, import_subscribers, login, make_user, wait_until

FRAME = 600  # bytes on the wire per frame
UE, TEID, VNI, VLAN, PORT = "10.45.0.7", 7, 5001, 100, 5001


def need_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test creates veths: run it as root (CI does)")
    assert shutil.which("tcpreplay"), "tcpreplay is missing: scripts/bootstrap.sh installs it"


def write_pcap(path: Path, pps: int) -> int:
    """One second of the slice's uplink flow (``pps`` frames of FRAME bytes); returns the frame size."""
    flow = Flow(UE, "10.9.0.1", PORT, vni=VNI, teid=TEID)
    pkt = build(flow, bytes(max(0, FRAME - len(build(flow)))))
    data = bytes(pkt)
    w = PcapWriter(str(path), linktype=1, sync=False)
    w.write_header(None)
    for i in range(pps):
        t_us = i * 1_000_000 // pps
        w.write_packet(data, sec=t_us // 1_000_000, usec=t_us % 1_000_000)
    w.close()
    return len(data)


def deploy(
    client: TestClient, session: Session, driver: str, options: dict[str, Any], rate_limit_mbps: float | None
) -> tuple[int, int]:
    """Register the backend, a tenant, one slice with one service on catalogue lane 2 and its
    subscriber, and deploy, all through the API as an operator; (backend id, slice id)."""
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    bid = int(add_backend(client, op, f"{driver}-own", options, driver)["id"])
    tenant = add_tenant(client, op, "mvno-a", VNI, VLAN)
    sla = {} if rate_limit_mbps is None else {"rate_limit_mbps": rate_limit_mbps}
    services = [{"name": "video", "lane": 2, "dst_ports": [{"lo": PORT, "hi": PORT}]}]
    sid = add_slice(client, op, tenant, sla=sla, services=services, backend_ids=[bid])
    import_subscribers(client, op, [f"001010000000007,{UE},{TEID},mvno-a,embb"])
    r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
    assert r.status_code in (200, 201) and r.json()["status"] == "succeeded", r.text
    return bid, sid


@dataclass
class Run:
    """One replay: the plane's own counters around it and the samples the collector wrote."""

    pps: int
    seconds: int
    size: int  # frame bytes
    before: Counters
    after: Counters
    samples: list[KpiSample]
    started: datetime  # just before tcpreplay was started: no frame of the replay is older

    @property
    def sent(self) -> int:
        return self.pps * self.seconds

    def lane(self) -> tuple[LaneCounters, LaneCounters | None]:
        """The one slice lane the plane counted: (after, before)."""
        assert len(self.after.slice_lanes) == 1, self.after.slice_lanes
        key = next(iter(self.after.slice_lanes))
        return self.after.slice_lanes[key], self.before.slice_lanes.get(key)

    def plane_drops(self) -> dict[str, int]:
        """Drops by cause the plane counted over the replay (causes with none left out)."""
        now, before = self.lane()
        d = {k: v - (before.drops.get(k, 0) if before else 0) for k, v in now.drops.items()}
        return {k: v for k, v in d.items() if v}

    def entered(self) -> int:
        now, before = self.lane()
        return now.packets - (before.packets if before else 0)

    def sample_drops(self) -> dict[str, int]:
        total: Tally[str] = Tally()
        for x in self.samples:
            total.update(x.drops)
        return {k: v for k, v in total.items() if v}

    def steady(self) -> list[KpiSample]:
        """The samples of the replay's full intervals (not its first nor its last)."""
        return [x for x in self.samples if x.tx_packets >= self.pps * 0.5][1:-1]


def replay_and_collect(
    session: Session,
    db_url: str,
    bid: int,
    sid: int,
    read: Callable[[], Counters],
    iface: str,
    pcap: Path,
    pps: int,
    seconds: int,
    size: int,
) -> Run:
    """Run the KPI collector as the controller runs it (the shared driver pool, 1 s) while
    ``tcpreplay`` sends ``pcap`` ``seconds`` times at ``pps`` into ``iface``; ``read`` is the
    plane's own counters, read beside the portal's. Checks the first sample came within 5 s."""
    collector = KpiCollector(session_factory(db_url), pooled_counters, 1.0)
    try:
        collector.start()
        # the collector's first read is its baseline: the replay starts after it
        wait_until("the collector's baseline", lambda: bid in collector._baselines, 20)
        before = read()
        started = datetime.now(UTC)
        replay = subprocess.Popen(
            ["tcpreplay", "-q", f"--intf1={iface}", f"--pps={pps}", f"--loop={seconds}", str(pcap)],
            stdout=subprocess.PIPE,
            stderr=subprocess.STDOUT,
        )

        def samples() -> list[KpiSample]:
            session.expire_all()
            return list(
                session.scalars(
                    select(KpiSample)
                    .where(
                        KpiSample.slice_id == sid,
                        KpiSample.backend_id == bid,
                        KpiSample.source == "counters",
                        KpiSample.ts > started,
                    )
                    .order_by(KpiSample.ts)
                )
            )

        first = wait_until("a counters sample", samples, 5.0 + 1.0, poll_s=0.1)
        assert (first[0].ts - started).total_seconds() <= 5.0
        out, _ = replay.communicate(timeout=seconds * 4 + 30)
        assert replay.returncode == 0, out.decode(errors="replace")
        # the plane's own count of what entered, left and was dropped, once its queue drained
        after = wait_until("the plane's counters to settle", settled(read), 20)

        def all_counted() -> list[KpiSample] | None:
            # every frame entered, and left or was dropped (a queue drains after the replay)
            got = samples()
            entered, out = sum(x.tx_packets for x in got), sum(x.rx_packets + sum(x.drops.values()) for x in got)
            return got if min(entered, out) >= pps * seconds else None

        got = wait_until("samples covering every replayed packet", all_counted, 10)
    finally:
        collector.stop()
        backend = session.get(Backend, bid)
        assert backend is not None
        POOL.discard(session, backend)  # its data plane is gone with this test
    return Run(pps, seconds, size, before, after, got, started)


def deploy_and_replay(
    client: TestClient,
    session: Session,
    db_url: str,
    tmp_path: Path,
    plane: Callable[[dict[str, Any]], Any],
    driver: str,
    options: dict[str, Any],
    rate_limit_mbps: float | None,
    iface: str,
    pps: int,
    seconds: int,
) -> Run:
    """``deploy`` to the plane (``driver``, registered with ``options``), then
    ``replay_and_collect`` its slice's flow at ``pps`` for ``seconds`` into ``iface``, the
    plane's own counters read beside the portal's by a driver of the test's, ``plane(options)``."""
    bid, sid = deploy(client, session, driver, options, rate_limit_mbps)
    size = write_pcap(tmp_path / "flow.pcap", pps)
    reader = plane(options)
    try:
        return replay_and_collect(
            session, db_url, bid, sid, reader.counters, iface, tmp_path / "flow.pcap", pps, seconds, size
        )
    finally:
        reader.close()


def settled(read: Callable[[], Counters]) -> Callable[[], Counters | None]:
    """A check that holds once two successive reads of the plane's slice lanes agree."""
    last: list[Counters] = []

    def check() -> Counters | None:
        now = read()
        same = bool(last) and last[-1].slice_lanes == now.slice_lanes and bool(now.slice_lanes)
        last[:] = [now]
        return now if same else None

    return check


def check_counted(run: Run) -> None:
    """What every plane must pass: every replayed frame entered and reached the samples; the
    loss in the samples is the plane's own drops, cause by cause, none invented; the offered
    load over the replay's full intervals within 5 % of the replay rate."""
    got = run.samples
    assert run.entered() == run.sent == sum(x.tx_packets for x in got), (run.entered(), run.sent)
    assert run.sample_drops() == run.plane_drops(), (run.sample_drops(), run.plane_drops())
    assert sum(x.tx_packets - x.rx_packets for x in got) == sum(run.plane_drops().values())
    # an interval in which nothing entered (a queue draining after the replay) has no loss
    assert all(x.loss_pct == pytest.approx(100 * sum(x.drops.values()) / max(x.tx_packets, 1)) for x in got)
    steady = run.steady()
    assert len(steady) >= 3, [(x.ts, x.tx_packets) for x in got]
    offered_bps = sum(x.tx_bytes for x in steady) * 8 / sum(x.interval_s for x in steady)
    assert offered_bps == pytest.approx(run.pps * run.size * 8, rel=0.05), [(x.tx_bytes, x.interval_s) for x in steady]
