"""The XDP agent's ``GET /metrics``: its per slice x lane counters in Prometheus text format,
with the portal's names and label set, after packets run through the real program
(BPF_PROG_TEST_RUN), parsed with prometheus_client's own parser."""

from __future__ import annotations

import time

import pytest
from fastapi.testclient import TestClient
from prometheus_client import CollectorRegistry, generate_latest
from prometheus_client.parser import text_string_to_metric_families

from sliceportal.drivers.contract import DELAY_BUCKETS, Counters, DelayHistogram, LaneCounters
from sliceportal.traffic.packets import build_bytes
from sliceportal_xdp.agent import CountersCollector, create_app

from .conftest import LANES_ON_CPU0, loaded, noop
from .test_slice_lanes import flow, ir

TOKEN = "metrics-test-token-0123456789"


def samples(text: str) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    return {
        (s.name, tuple(sorted(s.labels.items()))): s.value
        for family in text_string_to_metric_families(text)
        for s in family.samples
    }


def lane(slice_id: str, lane: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted({"slice": slice_id, "backend": "xdp-m", "lane": lane, "source": "counters"}.items()))


@pytest.mark.needs_root
def test_metrics_after_traffic_carry_the_portal_names_and_labels() -> None:
    d = loaded(lane_cpus=LANES_ON_CPU0)
    try:
        d.apply(d.lower(ir()), noop)
        with TestClient(create_app(d, TOKEN, "xdp-m")) as client:
            assert client.get("/metrics").status_code == 401  # the token, like every route
            auth = {"Authorization": f"Bearer {TOKEN}"}
            before = samples(client.get("/metrics", headers=auth).text)
            sent = {10: 4, 11: 3, 20: 5, 21: 2, 999: 6}  # 999: a miss, in no slice
            size = {teid: len(build_bytes(flow(teid))) for teid in sent}
            for teid, n in sent.items():
                for _ in range(n):
                    d.run(build_bytes(flow(teid)))
            r = client.get("/metrics", headers=auth)
            assert r.status_code == 200 and r.headers["content-type"].startswith("text/plain")
            after = samples(r.text)

        def grew(name: str, labels: tuple[tuple[str, str], ...]) -> float:
            return after[(name, labels)] - before.get((name, labels), 0.0)

        assert grew("sliceportal_lane_sent_packets_total", lane("1", "3")) == 4
        assert grew("sliceportal_lane_sent_bytes_total", lane("1", "3")) == 4 * size[10]
        assert grew("sliceportal_lane_sent_packets_total", lane("1", "1")) == 3
        assert grew("sliceportal_lane_sent_packets_total", lane("2", "2")) == 7
        assert grew("sliceportal_lane_sent_bytes_total", lane("2", "2")) == 5 * size[20] + 2 * size[21]
        # the agent's figures are the driver's counters, as the portal's collector reads them
        c = d.counters()
        for key, lc in c.slice_lanes.items():
            s, _, ln = key.partition("/")
            assert after[("sliceportal_lane_sent_packets_total", lane(s, ln))] == lc.packets
            assert after[("sliceportal_lane_dropped_packets_total", lane(s, ln))] == sum(lc.drops.values())
        # XDP counts no egress and no queueing delay: no series, never zeros
        names = {name for name, _ in after}
        assert not names & {"sliceportal_lane_received_packets_total", "sliceportal_lane_queue_delay_seconds_bucket"}
    finally:
        d.close()


def test_a_delay_histogram_becomes_cumulative_buckets_in_seconds() -> None:
    buckets = [0] * DELAY_BUCKETS
    buckets[0], buckets[3], buckets[-1] = 2, 5, 1  # sojourns < 2 us, in [8, 16) us, past the last bucket
    counters = Counters(
        timestamp=time.time(),
        slice_lanes={
            "4/1": LaneCounters(
                packets=10,
                bytes=1000,
                tx_packets=8,
                tx_bytes=800,
                drops={"queue": 1, "meter_red": 1},
                ecn_marks=3,
                delay=DelayHistogram(unit_ns=1000, count=8, sum=100, max=12, buckets=tuple(buckets)),
            )
        },
    )
    registry = CollectorRegistry(auto_describe=False)
    registry.register(CountersCollector(lambda: counters, "nf-1"))
    got = {
        (s.name, s.labels.get("le")): s.value
        for f in text_string_to_metric_families(generate_latest(registry).decode())
        for s in f.samples
        if s.labels["slice"] == "4" and s.labels["lane"] == "1" and s.labels["backend"] == "nf-1"
    }
    assert got[("sliceportal_lane_received_packets_total", None)] == 8
    assert got[("sliceportal_lane_dropped_packets_total", None)] == 2
    assert got[("sliceportal_lane_ecn_marked_packets_total", None)] == 3
    assert got[("sliceportal_lane_queue_delay_seconds_bucket", "2e-06")] == 2
    assert got[("sliceportal_lane_queue_delay_seconds_bucket", "8e-06")] == 2
    assert got[("sliceportal_lane_queue_delay_seconds_bucket", "1.6e-05")] == 7
    assert got[("sliceportal_lane_queue_delay_seconds_bucket", "+Inf")] == 8
    assert got[("sliceportal_lane_queue_delay_seconds_count", None)] == 8
    assert got[("sliceportal_lane_queue_delay_seconds_sum", None)] == pytest.approx(100e-6)
