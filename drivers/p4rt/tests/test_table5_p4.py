"""Seed 000 Table 5's pattern on the P4 target: Table 3 traffic (4 slices x 32 users x 16
services) classified by the compiled Table 2 rules into 4 strict-priority queues on an
egress link 20 % slower than the offered load. Lane delays are ordered 3 < 2 < 1 < 0, the
top lanes lose nothing and lane 0 absorbs the loss — as on the paper's NetFPGA card.

The target runs on the packets' own timestamps, so the result does not depend on how fast
Python forwards them; delay is the output pcap's departure time minus the send time each
payload carries.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from pathlib import Path

from sliceportal.drivers.push import target_spec
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.scenarios import table3_config
from sliceportal.traffic.capture import measure_pcap
from sliceportal.traffic.meter import Meter
from sliceportal.traffic.pcapgen import write_pcap
from sliceportal.traffic.profiles import ConstantRate
from sliceportal.traffic.scenarios import table3
from sliceportal_p4rt.driver import Driver

from .traffic import run_pcaps

SLICES, PACKETS_PER_FLOW = 4, 4
OFFERED_PPS = 100_000  # 1500 B frames: 1.2 Gbit/s into a 1 Gbit/s link
LINK_BPS = 1_000_000_000


def test_table5_pattern_on_the_p4_target(start_target: Callable[..., object], tmp_path: Path) -> None:
    target = start_target("--priority-queues", "4", "--link-rate-bps", str(LINK_BPS))
    driver = Driver(
        {
            "address": target.address,
            "lanes": 4,
            "access_ports": {1: 100},
            "trunk_ports": [2],  # type: ignore[attr-defined]
            "uplink_port": 2,
        }
    )
    tenants, slices = table3_config(SLICES)
    tenants = tuple(dataclasses.replace(t, vlan=100) for t in tenants)  # table slicing keys tenants by VLAN
    compiled = compile_rules(tenants, slices, target_spec(driver.capabilities()))
    driver.apply(driver.lower(compiled.ir), lambda _: None)

    flows = sorted(table3(SLICES), key=lambda sf: (sf.user, sf.service, sf.slice_index))
    write_pcap(
        tmp_path / "in.pcap", flows, ConstantRate(OFFERED_PPS), packets=PACKETS_PER_FLOW * len(flows), start_ns=10**9
    )
    run_pcaps(target.address, {1: tmp_path / "in.pcap"}, tmp_path / "out")  # type: ignore[attr-defined]
    meter = Meter(
        {sf.flow_id: (sf.slice_index, sf.lane(4)) for sf in flows}, sent={sf.flow_id: PACKETS_PER_FLOW for sf in flows}
    )
    measure_pcap(tmp_path / "out" / "port2.pcap", meter)
    report = meter.report()
    driver.close()

    by_lane: dict[int, list[float]] = {}
    loss: dict[int, tuple[int, int]] = {}
    for g in report.lanes:
        assert g.lane is not None
        lost, expected = loss.get(g.lane, (0, 0))
        loss[g.lane] = (lost + g.lost, expected + g.expected)
        if g.delay is not None:
            by_lane.setdefault(g.lane, []).append(g.delay.mean_us)
    loss_pct = {lane: 100 * lost / expected for lane, (lost, expected) in loss.items()}
    delay = {lane: sum(v) / len(v) for lane, v in by_lane.items()}
    assert sorted(loss_pct) == [0, 1, 2, 3]
    assert loss_pct[3] == 0 and loss_pct[2] == 0
    assert loss_pct[1] < 2
    assert loss_pct[0] > 30  # a fifth of the offered load is lost, almost all of it from lane 0
    assert delay[3] < delay[2] < delay[1] < delay[0], delay
