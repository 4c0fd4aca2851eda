"""Which (slice, lane)s the testbed probes on a plane: those its rule set puts a flow in."""

from __future__ import annotations

from sliceportal.traffic.packets import Flow
from sliceportal.traffic.scenarios import ScenarioFlow
from sliceportal_testbed.placement import DEFAULT_SLICE
from sliceportal_testbed.probes import probe_lanes


def _sf(flow_id: int, slice_id: int, lane: int) -> ScenarioFlow:
    flow = Flow(f"10.45.0.{flow_id}", "10.99.0.1", 5000 + lane)
    return ScenarioFlow(flow_id=flow_id, flow=flow, slice_index=slice_id, user=0, service=lane, priority=lane)


def test_probes_follow_the_placement_not_the_generators_intent() -> None:
    flows = [_sf(1, 3, 0), _sf(2, 3, 0), _sf(3, 3, 4), _sf(4, 5, 2), _sf(5, 7, 1)]
    places = {
        1: (3, 0),
        2: (3, 0),  # a second flow of the same place: the first one carries the probes
        3: (3, 4),
        4: (DEFAULT_SLICE, 0),  # slice 5 is not in the rule set: default traffic, not probed as slice 5's
        # flow 5: no place yet (a new generation before its placement)
    }
    got = [(p.slice_id, p.lane, p.flow.flow_id) for p in probe_lanes(flows, places)]
    assert got == [(3, 0, 1), (3, 4, 3)]
