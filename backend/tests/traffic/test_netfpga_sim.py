"""Seed 000 Table 3 traffic through the simulated NetFPGA card, measured from cycle counts.

The real Verilator model (``sp_sim``) with its DMA drain slower than ingress: no rules, so
every packet takes Algorithm 1's miss path (lane = inner DSCP bits 2:1), and the meter's
per-lane figures must show seed 000 Table 5's pattern and agree exactly with the card's counts.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from sliceportal.traffic.capture import CaptureError, measure_cycle_capture
from sliceportal.traffic.meter import Meter
from sliceportal.traffic.pcapgen import write_pcap
from sliceportal.traffic.profiles import ConstantRate
from sliceportal.traffic.scenarios import table3

simulator = pytest.importorskip("sliceportal_netfpga.simulator")


@pytest.fixture(scope="module")
def sim_binary() -> Path:
    binary = Path(simulator.DEFAULT_BINARY)
    if not binary.exists():
        pytest.skip(f"{binary} not built (make -C dataplane/netfpga all)")
    return binary


def test_table3_through_the_simulated_card(sim_binary: Path, tmp_path: Path) -> None:
    flows = table3(1)
    sim = simulator.start(tmp_path / "sim.sock", "--ingress-gbps", "10", "--drain-gbps", "4", binary=sim_binary)
    try:
        sent = write_pcap(tmp_path / "in.pcap", flows, ConstantRate(1e6), packets=2 * len(flows), start_ns=0)
        sim.command(f"CAPTURE {tmp_path / 'out.pcap'}")
        sim.command(f"INJECT {tmp_path / 'in.pcap'}")
        sim.command("RUN")
        stats = dict(re.findall(r"(\w+)=(\d+)", sim.command("STATS")))
    finally:
        sim.stop()
    miss_lane = {sf.flow_id: (0, (sf.flow.dscp >> 1) & 3) for sf in flows}  # Algorithm 1 on a miss
    meter = Meter(miss_lane, sent.sent)
    frames = measure_cycle_capture(tmp_path / "out.pcap", tmp_path / "out.pcap.csv", meter)
    report = meter.report()

    assert int(stats["injected"]) == sent.packets
    assert frames == int(stats["dma"]) == report.total.received
    assert report.total.lost == sent.packets - frames  # exactly what the card did not deliver
    assert report.foreign == 0 and report.total.duplicates == 0
    lanes = {g.lane: g for g in report.lanes}
    assert lanes[3].lost == 0  # Table 5: the top lane is lossless under congestion
    assert lanes[0].lost > 0  # … and the lowest lane absorbs the loss
    delay = {lane: g.delay.mean_us for lane, g in lanes.items() if g.delay is not None}
    assert delay[3] < delay[2] < delay[1] < delay[0]  # delays ordered by priority
    assert lanes[3].delay is not None and lanes[3].delay.min_us > 0


def test_cycle_capture_files_must_agree(tmp_path: Path) -> None:
    flows = table3(1)
    write_pcap(tmp_path / "out.pcap", flows[:3], ConstantRate(1e3), packets=3, start_ns=0)
    csv_path = tmp_path / "out.pcap.csv"
    csv_path.write_text("in_cycle,out_cycle,len,rr_path,lane,slice_id\n10,30,1500,0,0,0\n")
    with pytest.raises(CaptureError):  # 3 frames, 1 row
        measure_cycle_capture(tmp_path / "out.pcap", csv_path, Meter())
    csv_path.write_text("in_cycle,out_cycle\n10,x\n")
    with pytest.raises(CaptureError):
        measure_cycle_capture(tmp_path / "out.pcap", csv_path, Meter())
    rows = "".join(f"{10 * i},{10 * i + 200},1500,0,0,0\n" for i in range(3))
    csv_path.write_text("in_cycle,out_cycle,len,rr_path,lane,slice_id\n" + rows)
    meter = Meter()
    assert measure_cycle_capture(tmp_path / "out.pcap", csv_path, meter) == 3
    report = meter.report()
    assert report.total.delay is not None and report.total.delay.max_us == pytest.approx(1.0)  # 200 x 5 ns
