"""KPIs from a data plane's own counters, without the testbed (#25): a real
``simple_switch_grpc`` on veths this test creates, registered and deployed through the API,
traffic replayed by ``tcpreplay`` at a known rate, the KPI collector as the controller runs it.

Checked: samples (source 'counters') within 5 s of the replay's start; the offered load they
report within ±5 % of the replay rate; the loss they report equal to the drops the switch
itself counted (its per slice-lane counters read through the driver); queueing delay present.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from scapy.utils import PcapWriter
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.control.controller import pooled_counters
from sliceportal.core.db import session_factory
from sliceportal.drivers.contract import Counters
from sliceportal.kpi.collector import KpiCollector
from sliceportal.models import Backend, KpiSample, Role
from sliceportal.services.backends import POOL
from sliceportal.traffic.packets import Flow, build
from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc
from tests.factories import login, make_user, slice_type_id, tenant_body, wait_until

pytestmark = [pytest.mark.slow, pytest.mark.needs_root]

PPS = 400  # the replay's packet rate: well inside what simple_switch_grpc forwards on this host
FRAME = 600  # bytes on the wire per frame
REPLAY_S = 8
RATE_LIMIT_MBPS = 1.0  # half the offered ~1.9 Mbit/s: the slice's policer drops the rest
UE, TEID, VNI, VLAN, PORT = "10.45.0.7", 7, 5001, 100, 5001


def _veths(tag: str) -> Iterator[dict[int, tuple[str, str]]]:
    ends = {p: (f"{tag}{p}s", f"{tag}{p}t") for p in (1, 3)}
    try:
        for s, t in ends.values():
            subprocess.run(["ip", "link", "add", s, "type", "veth", "peer", "name", t], check=True)
            for dev in (s, t):
                subprocess.run(["ip", "link", "set", dev, "up"], check=True)
                subprocess.run(["sysctl", "-qw", f"net.ipv6.conf.{dev}.disable_ipv6=1"], check=False)
        yield ends
    finally:
        for s, _ in ends.values():
            subprocess.run(["ip", "link", "del", s], check=False, capture_output=True)


@pytest.fixture
def veths() -> Iterator[dict[int, tuple[str, str]]]:
    if os.geteuid() != 0:
        pytest.fail("this test creates veths: run it as root (CI does)")
    yield from _veths(f"kc{os.getpid() % 10000}-")


def _pcap(path: Path) -> int:
    """One second of the slice's uplink flow (PPS frames of FRAME bytes); returns the frame size."""
    flow = Flow(UE, "10.9.0.1", PORT, vni=VNI, teid=TEID)
    pkt = build(flow, bytes(max(0, FRAME - len(build(flow)))))
    data = bytes(pkt)
    w = PcapWriter(str(path), linktype=1, sync=False)
    w.write_header(None)
    for i in range(PPS):
        t_us = i * 1_000_000 // PPS
        w.write_packet(data, sec=t_us // 1_000_000, usec=t_us % 1_000_000)
    w.close()
    return len(data)


def test_counters_become_kpis_without_the_testbed(client: TestClient, session: Session, db_url: str,
                                                  veths: dict[int, tuple[str, str]], tmp_path: Path) -> None:
    assert shutil.which("tcpreplay"), "tcpreplay is missing: scripts/bootstrap.sh installs it"
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    with start_simple_switch_grpc({p: s for p, (s, _) in veths.items()}, priority_queues=8) as switch:
        options = {"address": switch.address, "access_ports": {"1": VLAN}, "trunk_ports": [3], "uplink_port": 3}
        r = client.post("/api/v1/backends", json={"name": "bmv2-own", "driver": "p4rt", "options": options},
                        headers=op)
        assert r.status_code == 201, r.text
        bid = r.json()["id"]
        tenant = client.post("/api/v1/tenants", json=tenant_body("mvno-a", VNI, VLAN), headers=op).json()["id"]
        s = client.post("/api/v1/slices", json={
            "name": "embb", "tenant_id": tenant, "slice_type_id": slice_type_id(client, op, "Flexible Slice"),
            "sla": {"rate_limit_mbps": RATE_LIMIT_MBPS},
            "services": [{"name": "video", "lane": 2, "dst_ports": [{"lo": PORT, "hi": PORT}]}],
            "backend_ids": [bid]}, headers=op)
        assert s.status_code == 201, s.text
        sid = s.json()["id"]
        csv = f"imsi,ue_ip,teids,tenant,slices\n001010000000007,{UE},{TEID},mvno-a,embb\n"
        r = client.post("/api/v1/subscribers/import", files={"file": ("s.csv", csv.encode(), "text/csv")}, headers=op)
        assert r.status_code == 201, r.text
        r = client.post(f"/api/v1/backends/{bid}/deployments", headers=op)
        assert r.status_code in (200, 201) and r.json()["status"] == "succeeded", r.text

        size = _pcap(tmp_path / "flow.pcap")
        collector = KpiCollector(session_factory(db_url), pooled_counters, 1.0)
        reader = Driver(options)  # the switch's own counters, beside the portal's
        try:
            collector.start()
            # the collector's first read is its baseline: the replay starts after it
            wait_until("the collector's baseline", lambda: bid in collector._baselines, 20)
            before = reader.counters()
            started = datetime.now(UTC)
            replay = subprocess.Popen(
                ["tcpreplay", "-q", f"--intf1={veths[1][1]}", f"--pps={PPS}", f"--loop={REPLAY_S}",
                 str(tmp_path / "flow.pcap")], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)

            def samples() -> list[KpiSample]:
                session.expire_all()
                return list(session.scalars(select(KpiSample).where(
                    KpiSample.slice_id == sid, KpiSample.backend_id == bid, KpiSample.source == "counters",
                    KpiSample.ts > started).order_by(KpiSample.ts)))

            first = wait_until("a counters sample", samples, 5.0 + 1.0, poll_s=0.1)
            assert (first[0].ts - started).total_seconds() <= 5.0
            out, _ = replay.communicate(timeout=REPLAY_S * 4 + 30)
            assert replay.returncode == 0, out.decode(errors="replace")
            # the switch's own count of what entered, left and was dropped, once the queue drained
            after = wait_until("the switch's counters to settle", _settled(reader), 20)
            sent = PPS * REPLAY_S

            def all_counted() -> list[KpiSample] | None:
                got = samples()
                return got if sum(x.tx_packets for x in got) >= sent else None

            got = wait_until("samples covering every replayed packet", all_counted, 10)
        finally:
            collector.stop()
            reader.close()
            backend = session.get(Backend, bid)
            assert backend is not None
            POOL.discard(session, backend)  # its switch is gone with this test

    key = next(k for k in after.slice_lanes)
    lane_now, lane_before = after.slice_lanes[key], before.slice_lanes.get(key)
    switch_drops = sum(lane_now.drops.values()) - (sum(lane_before.drops.values()) if lane_before else 0)
    entered = lane_now.packets - (lane_before.packets if lane_before else 0)
    assert entered == sent == sum(x.tx_packets for x in got), (entered, sent)
    # loss: the drops the switch counted, by cause, nothing invented
    sample_drops = sum(sum(x.drops.values()) for x in got)
    # how many the trTCM policer drops depends on how tcpreplay bunches the frames (14-47 % seen);
    # what is checked is that every one of them reaches the samples, none invented
    assert switch_drops > 0, "the policer should drop: the test offers about twice the rate limit"
    assert sample_drops == switch_drops, (sample_drops, switch_drops)
    assert sum(x.tx_packets - x.rx_packets for x in got) == switch_drops
    # the offered load over the replay's full intervals within 5 % of the replay rate
    steady = [x for x in got if x.tx_packets >= PPS * 0.5][1:-1]
    assert len(steady) >= 3, [(x.ts, x.tx_packets) for x in got]
    offered_bps = sum(x.tx_bytes for x in steady) * 8 / sum(x.interval_s for x in steady)
    assert offered_bps == pytest.approx(PPS * size * 8, rel=0.05), [(x.tx_bytes, x.interval_s) for x in steady]
    # delivered: what left the lane, below the offered load by the drops (over the replay: a frame
    # that entered in one interval may leave in the next)
    assert sum(x.throughput_bps * x.interval_s for x in steady) < sum(x.tx_bytes * 8 for x in steady)
    assert all(x.loss_pct == pytest.approx(100 * sum(x.drops.values()) / x.tx_packets) for x in got)
    # queueing delay: the P4 program measures it per slice x lane (None would be "not measured")
    assert all(x.delay_p99_ms is not None for x in steady), [x.delay_p99_ms for x in steady]


def _settled(reader: Driver) -> Callable[[], Counters | None]:
    """A check that holds once two successive reads of the switch's slice lanes agree."""
    last: list[Counters] = []

    def check() -> Counters | None:
        now = reader.counters()
        same = bool(last) and last[-1].slice_lanes == now.slice_lanes and bool(now.slice_lanes)
        last[:] = [now]
        return now if same else None
    return check
