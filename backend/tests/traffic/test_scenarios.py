"""The scenarios follow the papers' tables and the shared address plan."""

from __future__ import annotations

import ipaddress

import pytest

from sliceportal.rules.scenarios import service_lane, table3_flows
from sliceportal.traffic import scenarios
from sliceportal.traffic.scenarios import ScenarioError, table1, table3


@pytest.mark.parametrize("slices", scenarios.TABLE3_SLICES)
def test_table3_has_the_papers_flow_counts(slices: int) -> None:
    flows = table3(slices)
    assert len(flows) == slices * 32 * 16  # Table 3: 512 … 8192 flows
    assert len({sf.flow.src_ip for sf in flows}) == slices * 32  # 32 … 512 users
    assert [sf.flow_id for sf in flows] == list(range(len(flows)))


def test_table3_address_plan_ports_dscp_and_lanes() -> None:
    flows = table3(2)
    for sf in flows:
        f = sf.flow
        assert ipaddress.IPv4Address(f.src_ip) in ipaddress.IPv4Network(f"10.0.{sf.slice_index}.32/27")
        assert f.vni == 0x445
        assert f.teid == 0x10000 + sf.slice_index * 32 + sf.user
        assert f.dst_port == 5000 + 2 * sf.service
        assert f.dscp == sf.service % 8
        assert sf.frame_size == 1500
    ports = sorted({sf.flow.dst_port for sf in flows})
    assert ports == list(range(5000, 5031, 2))
    # seed 000 Table 2 on the 4-lane prototype: 5000-5006 -> 0 … 5024-5030 -> 3
    lane4 = {sf.flow.dst_port: sf.lane(4) for sf in flows}
    assert [lane4[p] for p in ports] == [0] * 4 + [1] * 4 + [2] * 4 + [3] * 4
    assert sorted({sf.lane(8) for sf in flows}) == [0, 2, 4, 6]  # Flexible Slice lanes


@pytest.mark.parametrize("slices", [1, 4])
def test_table3_traffic_is_what_the_compiler_configures(slices: int) -> None:
    """Our packets must present exactly the keys the rule compiler's scenario builds rules for."""
    ours = {(sf.flow.key(), sf.slice_index, sf.lane(8)) for sf in table3(slices)}
    theirs = {(f.key(), f.slice_index, service_lane(f.dst_port)) for f in table3_flows(slices)}
    assert ours == theirs
    assert len(ours) == slices * 32 * 16


@pytest.mark.parametrize("size", sorted(scenarios.TABLE1_LOADS))
def test_table1_loads(size: int) -> None:
    flows = table1(size)
    assert len(flows) == 16
    assert sum(sf.prioritised for sf in flows) == 8
    assert {sf.lane(8) for sf in flows if sf.prioritised} == {7}
    assert {sf.lane(8) for sf in flows if not sf.prioritised} == {0}
    assert len({sf.flow.teid for sf in flows}) == 16
    floor = scenarios.min_frame_size(flows[0].flow)
    assert all(sf.frame_size == max(size, floor) for sf in flows)


def test_bad_scenarios_are_refused() -> None:
    with pytest.raises(ScenarioError):
        table3(0)
    with pytest.raises(ScenarioError):
        table3(1, users=33)
    with pytest.raises(ScenarioError):
        table3(1, frame_size=100)  # below the nested headers + payload header
    with pytest.raises(ScenarioError):
        table1(512, services=4, prio_services=8)
