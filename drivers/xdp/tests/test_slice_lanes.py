"""Per slice x lane counters of the XDP program (issue #25): what each IR slice's rules
counted per lane, run through the real program with BPF_PROG_TEST_RUN; no queueing delay
and no egress count ("not measured by this data plane", never zeros)."""

from __future__ import annotations

import pytest

from sliceportal.drivers.contract import Counters
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes

from .conftest import LANES_ON_CPU0, loaded, noop

pytestmark = pytest.mark.needs_root


def flow(teid: int) -> Flow:
    return Flow("10.1.0.1", "10.2.0.1", 5000, teid=teid, vni=3, encap=Encap.VXLAN_GTP)


def ir() -> RuleIR:
    # slice 1 on two lanes (by TEID), slice 2 on one lane with two rules
    return RuleIR(
        lanes=4,
        paths=8,
        rules=(
            Rule(Match(teid=Ternary.exact(10, 32)), Action(1, 3, 0)),
            Rule(Match(teid=Ternary.exact(11, 32)), Action(1, 1, 0)),
            Rule(Match(teid=Ternary.exact(20, 32)), Action(2, 2, 1)),
            Rule(Match(teid=Ternary.exact(21, 32)), Action(2, 2, 1)),
        ),
        miss=MissPolicy(MissMode.FIXED, lane=0, rr_path=7),
    )


def delta(after: Counters, before: Counters, key: str) -> tuple[int, int]:
    a, b = after.slice_lanes[key], before.slice_lanes.get(key)
    return a.packets - (b.packets if b else 0), a.bytes - (b.bytes if b else 0)


def test_slice_lanes_count_what_each_slice_lane_received_and_claim_no_delay() -> None:
    d = loaded(lane_cpus=LANES_ON_CPU0)
    try:
        d.apply(d.lower(ir()), noop)
        before = d.counters()
        sent = {10: 4, 11: 3, 20: 5, 21: 2, 999: 6}  # 999: a miss, in no slice
        size = {}
        for teid, n in sent.items():
            pkt = build_bytes(flow(teid))
            size[teid] = len(pkt)
            for _ in range(n):
                d.run(pkt)
        after = d.counters()
        assert set(after.slice_lanes) == {"1/3", "1/1", "2/2"}
        assert delta(after, before, "1/3") == (4, 4 * size[10])
        assert delta(after, before, "1/1") == (3, 3 * size[11])
        assert delta(after, before, "2/2") == (7, 5 * size[20] + 2 * size[21])
        for lc in after.slice_lanes.values():
            assert lc.delay is None and lc.tx_packets is None and lc.tx_bytes is None
        assert after.epoch is None  # a reload is not told apart from a counter wrap here
    finally:
        d.close()
