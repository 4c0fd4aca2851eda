"""The egress budget (``struct sp_egress``, set by the testbed's congestion scenario) on
BPF_PROG_TEST_RUN: under a budget the program refuses the lowest lane first and keeps
forwarding the highest lane from the reserve the lower lanes may not touch; no budget
changes nothing."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.libbpf import XDP_DROP

from .conftest import ALT_IP, ALT_MAC, SRC_MAC, noop

pytestmark = pytest.mark.needs_root

TOP_TEID, LOW_TEID = 10, 20  # lane 3 (highest of 4) and lane 0 (best effort)


@pytest.fixture()
def budgeted() -> Iterator[Driver]:
    d = Driver({"alt_mac": ALT_MAC, "alt_ip": ALT_IP, "src_mac": SRC_MAC, "alt_lanes": [0], "overload_poll_s": 0})
    ir = RuleIR(
        lanes=4,
        paths=8,
        rules=(
            Rule(Match(teid=Ternary.exact(TOP_TEID, 32)), Action(1, 3, 0)),
            Rule(Match(teid=Ternary.exact(LOW_TEID, 32)), Action(1, 0, 0)),
        ),
        miss=MissPolicy(MissMode.FIXED, lane=0, rr_path=7),
    )
    d.apply(d.lower(ir), noop)
    yield d
    d.dataplane.set_egress_budget(None, 4)
    d.close()


def _frame(teid: int) -> bytes:
    return build_bytes(Flow("10.1.0.1", "10.2.0.1", 5000, teid=teid, vni=3, encap=Encap.VXLAN_GTP), bytes(900))


def test_the_lowest_lane_is_refused_first_and_the_highest_keeps_the_reserve(budgeted: Driver) -> None:
    low, top = _frame(LOW_TEID), _frame(TOP_TEID)
    # 8 kbit/s refills ~1 byte/ms: within this test the bucket is what it started with,
    # 4 lanes x 4 x 1518 = 24288 bytes, of which lane 0 may use only the top quarter
    budgeted.dataplane.set_egress_budget(8000, 4)
    low_sent = 0
    while budgeted.run(low).retval != XDP_DROP:
        low_sent += 1
        assert low_sent < 100, "lane 0 never refused"
    assert 4 <= low_sent <= 7, low_sent  # 24288 / 4 = 6072 bytes of ~1000-byte frames
    top_sent = 0
    while budgeted.run(top).retval != XDP_DROP:
        top_sent += 1
        assert top_sent < 100, "lane 3 never refused"
    assert top_sent >= 17, top_sent  # the three quarters lane 0 could not touch
    assert budgeted.run(low).retval == XDP_DROP
    lanes = budgeted.counters().lanes
    assert sum(lanes["0/0"].drops.values()) >= 2 and sum(lanes["0/3"].drops.values()) >= 1, lanes


def test_no_budget_forwards_every_lane(budgeted: Driver) -> None:
    budgeted.dataplane.set_egress_budget(None, 4)
    for _ in range(200):
        assert budgeted.run(_frame(LOW_TEID)).retval != XDP_DROP
