"""KPIs from a data plane's own counters, without the testbed (#25): a real
``simple_switch_grpc`` on veths this test creates, registered and deployed through the API,
traffic replayed by ``tcpreplay`` at a known rate, the KPI collector as the controller runs it.

Checked: samples (source 'counters') within 5 s of the replay's start; the offered load they
report within ±5 % of the replay rate; the loss they report equal to the drops the switch
itself counted (its per slice-lane counters read through the driver); queueing delay present.
BMv2 has no queue rate without its Thrift CLI (not in ../shared/p4tools), so the delay against a
hand-computed sojourn is checked on the bundled target, whose egress link rate is an option: a
queue the test builds and lets grow, every sample's mean and p99 inside the bounds it implies.
The XDP agent and the NetFPGA model: test_collector_xdp.py, test_collector_netfpga.py.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc
from sliceportal_testbed.processes import RunningTarget
from sliceportal_testbed.veths import veth_pairs
from tests.kpi.collector_helpers import (
    VLAN,
    check_counted,
    deploy,
    deploy_and_replay,
    need_root,
    replay_and_collect,
    write_pcap,
)

pytestmark = [pytest.mark.slow, pytest.mark.needs_root]

PPS = 400  # the replay's packet rate: well inside what simple_switch_grpc forwards on this host
REPLAY_S = 8
RATE_LIMIT_MBPS = 1.0  # half the offered ~1.9 Mbit/s: the slice's policer drops the rest


def test_counters_become_kpis_without_the_testbed(
    client: TestClient, session: Session, db_url: str, tmp_path: Path
) -> None:
    need_root()
    tag = f"kc{os.getpid() % 10000}-"
    ends = {p: (f"{tag}{p}s", f"{tag}{p}t") for p in (1, 3)}
    with (
        veth_pairs(*ends.values()),
        start_simple_switch_grpc({p: s for p, (s, _) in ends.items()}, priority_queues=8) as switch,
    ):
        options = {"address": switch.address, "access_ports": {"1": VLAN}, "trunk_ports": [3], "uplink_port": 3}
        # the switch's own counters, beside the portal's
        run = deploy_and_replay(
            client, session, db_url, tmp_path, Driver, "p4rt", options, RATE_LIMIT_MBPS, ends[1][1], PPS, REPLAY_S
        )

    # how many the trTCM policer drops depends on how tcpreplay bunches the frames (14-47 % seen);
    # what is checked is that every one of them reaches the samples, none invented
    assert sum(run.plane_drops().values()) > 0, "the policer should drop: the test offers about twice the limit"
    check_counted(run)
    steady = run.steady()
    # delivered: what left the lane, below the offered load by the drops (over the replay: a frame
    # that entered in one interval may leave in the next)
    assert sum(x.throughput_bps * x.interval_s for x in steady) < sum(x.tx_bytes * 8 for x in steady)
    # queueing delay: the P4 program measures it per slice x lane (None would be "not measured")
    assert all(x.delay_p99_ms is not None for x in steady), [x.delay_p99_ms for x in steady]


# The bundled P4 target with a queue the test builds: lambda frames/s offered into one lane whose
# egress link drains MU frames/s, the queue deep enough never to overflow (it grows by
# lambda - MU a second to (lambda - MU) x REPLAY_S = 600 < 1024 packets). FIFO, so the frame that
# leaves d seconds after the first one arrived entered at d x MU / lambda and waited
# d x (1 - MU / lambda): the hand-computed sojourn every sample's delay is checked against.
LAMBDA_PPS, MU_PPS, QUEUE_DEPTH = 300, 200, 1024
VLAN_TAG = 4  # bytes the target adds on its way to the trunk: the link drains the tagged frames
# how late the first frame may enter after ``Run.started`` (tcpreplay's start) and how much later
# a sample is stamped than the counters it comes from (the collector's read within its interval)
START_LAG_S, READ_LAG_S = 0.5, 0.8
TOLERANCE_S = 0.25  # the engine's wall-clock drain on a loaded 2-core host


def test_queueing_delay_follows_a_queue_the_test_builds(
    client: TestClient, session: Session, db_url: str, tmp_path: Path, start_target: Callable[..., RunningTarget]
) -> None:
    need_root()
    tag = f"kq{os.getpid() % 10000}-"
    ends = {p: (f"{tag}{p}s", f"{tag}{p}t") for p in (1, 3)}
    size = write_pcap(tmp_path / "flow.pcap", LAMBDA_PPS)
    link_bps = MU_PPS * (size + VLAN_TAG) * 8
    with veth_pairs(*ends.values()):
        ports = [a for p, (s, _) in ends.items() for a in ("-i", f"{p}@{s}")]
        target = start_target(
            "--priority-queues", "8", "--queue-depth", str(QUEUE_DEPTH), "--link-rate-bps", str(link_bps), *ports
        )
        options = {"address": target.address, "access_ports": {"1": VLAN}, "trunk_ports": [3], "uplink_port": 3}
        bid, sid = deploy(client, session, "p4rt", options, None)
        reader = Driver(options)
        try:
            run = replay_and_collect(
                session, db_url, bid, sid, reader.counters, ends[1][1], tmp_path / "flow.pcap", LAMBDA_PPS, 6, size
            )
        finally:
            reader.close()

    check_counted(run)  # nothing dropped: the queue never filled
    # the link drains MU frames a second while the queue holds any (the rate the bounds assume)
    steady = run.steady()
    assert sum(x.rx_packets for x in steady) / sum(x.interval_s for x in steady) == pytest.approx(MU_PPS, rel=0.05)
    waited = 1 - MU_PPS / LAMBDA_PPS  # seconds of queueing per second since the first frame arrived
    checked = []
    for x in run.samples:
        if not x.rx_packets:
            continue
        assert x.delay_mean_ms is not None and x.delay_p99_ms is not None, x
        end = (x.ts - run.started).total_seconds()  # no counter of the sample is later than this
        start = end - x.interval_s - READ_LAG_S - START_LAG_S  # nor earlier than this after the first frame
        upper_ms = 1000 * (waited * end + TOLERANCE_S)
        lower_ms = 1000 * (waited * max(start, 0.0) - TOLERANCE_S)
        assert lower_ms <= x.delay_mean_ms <= upper_ms, (end, lower_ms, x.delay_mean_ms, upper_ms)
        assert x.delay_mean_ms * 0.5 <= x.delay_p99_ms <= upper_ms, (end, x.delay_mean_ms, x.delay_p99_ms, upper_ms)
        checked.append((round(end, 2), round(x.delay_mean_ms), round(x.delay_p99_ms)))
    # the queue grew through the replay and drained after it: the later samples waited longer
    assert len(checked) >= 5 and checked[-1][1] > checked[0][1] + 1000 * waited * 3, checked
    print(f"(s since the replay began, mean ms, p99 ms) per sample: {checked}")  # the figures, with -s
