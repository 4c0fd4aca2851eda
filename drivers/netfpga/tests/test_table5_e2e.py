"""End to end, seed 000 §6: the compiler builds the Table 3 configuration, the driver
installs it over CSR, Table 3 traffic (1-16 slices) crosses the simulated card faster than
the DMA drains it, and the per-lane results show the Table 5 pattern within tolerances."""

from __future__ import annotations

from pathlib import Path

import pytest

from sliceportal_netfpga.experiment import table5

INGRESS_GBPS = 10.0
# below the ingress rate, so the two-level queue is the bottleneck; 0.78 of the offered load is
# what the paper's lane-0 loss of 88.97 % implies (see bench/traffic_table5_netfpga.py)
DRAIN_GBPS = 7.8


@pytest.mark.slow
@pytest.mark.parametrize("slices", [1, 4, 8, 16])
def test_table5_pattern(sim_binary: Path, tmp_path: Path, slices: int) -> None:
    run = table5(
        slices, tmp_path, ingress_gbps=INGRESS_GBPS, drain_gbps=DRAIN_GBPS, packets_per_flow=2, binary=sim_binary
    )
    lanes = run.lanes
    for lane, g in sorted(lanes.items()):
        print(
            f"slices={slices} lane={lane} sent={g.expected} recv={g.received} loss={g.loss_pct:.2f}% "
            f"delay={g.delay.mean_us if g.delay else float('nan'):.2f}us jitter={g.jitter_us:.3f}us"
        )
    assert run.rules == 4 * slices  # 64 rules for 16 slices, as in the paper
    # The card's own drop counters agree with what the receiver missed.
    dropped = sum(c.drops.get("queue_full", 0) for c in run.counters.lanes.values())
    assert dropped == sum(g.lost for g in lanes.values())
    # Table 5: delay lane 3 < 2 < 1 < 0; lane 0 absorbs the loss; lanes 1-3 within 1 % (paper 0.2 %).
    d = [lanes[lane].delay.mean_us for lane in range(4)]  # type: ignore[union-attr]
    assert d[3] < d[2] < d[1] < d[0], d
    assert lanes[0].loss_pct >= 50.0, lanes[0].loss_pct
    assert all(lanes[lane].loss_pct <= 1.0 for lane in (1, 2, 3)), {k: g.loss_pct for k, g in lanes.items()}
