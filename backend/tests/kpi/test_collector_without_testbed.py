"""KPIs from a data plane's own counters, without the testbed (#25): a real
``simple_switch_grpc`` on veths this test creates, registered and deployed through the API,
traffic replayed by ``tcpreplay`` at a known rate, the KPI collector as the controller runs it.

Checked: samples (source 'counters') within 5 s of the replay's start; the offered load they
report within ±5 % of the replay rate; the loss they report equal to the drops the switch
itself counted (its per slice-lane counters read through the driver); queueing delay present.
The XDP agent and the NetFPGA model: test_collector_xdp.py, test_collector_netfpga.py.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc
from tests.kpi.collector_helpers import (
    VLAN,
    check_counted,
    deploy,
    need_root,
    replay_and_collect,
    veth_pairs,
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
        bid, sid = deploy(client, session, "p4rt", options, RATE_LIMIT_MBPS)
        size = write_pcap(tmp_path / "flow.pcap", PPS)
        reader = Driver(options)  # the switch's own counters, beside the portal's
        try:
            run = replay_and_collect(
                session, db_url, bid, sid, reader.counters, ends[1][1], tmp_path / "flow.pcap", PPS, REPLAY_S, size
            )
        finally:
            reader.close()

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
