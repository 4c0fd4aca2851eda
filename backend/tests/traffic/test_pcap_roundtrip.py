"""Generate -> pcap -> measure: exact counts, injected loss / reordering / delay found exactly."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from scapy.layers.l2 import Ether
from scapy.utils import EDecimal, PcapNgWriter, RawPcapReader, RawPcapWriter
from typer.testing import CliRunner

from sliceportal.traffic.capture import CaptureError, measure_pcap
from sliceportal.traffic.cli import app
from sliceportal.traffic.meter import Meter
from sliceportal.traffic.pcapgen import write_pcap
from sliceportal.traffic.profiles import Bursts, ConstantRate, PerFlowRates, ProfileError, per_service_rates
from sliceportal.traffic.scenarios import ScenarioError, table1, table3

START = 1_700_000_000_000_000_000


def _places(flows: list, lanes: int = 4) -> dict[int, tuple[int, int]]:
    return {sf.flow_id: (sf.slice_index, sf.lane(lanes)) for sf in flows}


def test_roundtrip_is_lossless_with_exact_counts(tmp_path: Path) -> None:
    flows = table3(2)
    pcap = tmp_path / "t3.pcap"
    sent = write_pcap(pcap, flows, ConstantRate(100_000), packets=5000, start_ns=START)
    assert sent.packets == 5000 and sum(sent.sent.values()) == 5000
    assert sent.last_ns - sent.first_ns == 4999 * 10_000  # 100 kpps: 10 µs apart
    meter = Meter(_places(flows), sent.sent)
    assert measure_pcap(pcap, meter) == 5000
    r = meter.report()
    assert (r.total.received, r.total.lost, r.total.duplicates, r.total.reordered, r.foreign) == (
        5000,
        0,
        0,
        0,
        0,
    )
    assert r.total.delay is not None and r.total.delay.max_us == 0.0  # record time == stamped send time
    assert r.total.bytes == 5000 * 1500
    assert r.total.rx_pps == pytest.approx(100_000)
    # 2 slices x 4 lanes, each lane 4 services x 32 users; 5000 round robin over 1024 flows
    assert len(r.lanes) == 8
    assert {g.flows for g in r.lanes} == {128}
    assert sum(g.received for g in r.lanes) == 5000
    assert [g.received for g in r.slices] == [2560, 2440]  # flows 0-511 get 5 packets, 512-1023 get 4 or 5


def test_pcapng_is_measured_as_pcap(tmp_path: Path) -> None:
    """The same frames and times as pcapng (what Wireshark and dumpcap write) measure the same."""
    flows = table3(1)
    pcap, ng = tmp_path / "t.pcap", tmp_path / "t.pcapng"
    sent = write_pcap(pcap, flows, ConstantRate(1000), packets=200, start_ns=START)
    writer = PcapNgWriter(str(ng))
    for frame, meta in RawPcapReader(str(pcap)):
        packet = Ether(frame)
        packet.time = EDecimal(meta.sec) + EDecimal(meta.usec) / 1_000_000_000  # nano pcap
        writer.write(packet)
    writer.close()
    reports = []
    for path in (pcap, ng):
        meter = Meter(_places(flows), sent.sent)
        assert measure_pcap(path, meter) == 200
        reports.append(meter.report().total)
    assert [(t.received, t.lost, t.reordered) for t in reports] == [(200, 0, 0), (200, 0, 0)]
    assert reports[1].rx_pps == pytest.approx(reports[0].rx_pps) == pytest.approx(1000)


def _rewrite(src: Path, dst: Path, keep: list[int]) -> None:
    """Copy records of ``src`` in the order of indices ``keep`` (drops and reorders) to ``dst``."""
    records = list(RawPcapReader(str(src)))
    writer = RawPcapWriter(str(dst), linktype=1, nano=True)
    writer.write_header(None)
    for i in keep:
        frame, meta = records[i]
        writer.write_packet(frame, sec=meta.sec, usec=meta.usec)
    writer.close()


def test_dropped_duplicated_and_reordered_records_are_measured_exactly(tmp_path: Path) -> None:
    flows = table1(512)  # 16 flows
    tx = tmp_path / "tx.pcap"
    sent = write_pcap(tx, flows, ConstantRate(1000), packets=160, start_ns=START)
    order = list(range(160))
    dropped = {0, 17, 33, 159, 100, 116}  # flows 0, 1, 1, 15, 4, 4
    order = [i for i in order if i not in dropped]
    a, b = order.index(40), order.index(56)  # flow 8's seq 2 and 3
    order[a], order[b] = order[b], order[a]  # seq 3 then 2: one packet reordered
    order.append(order[20])  # one duplicate
    rx = tmp_path / "rx.pcap"
    _rewrite(tx, rx, order)
    meter = Meter(_places(flows, 8), sent.sent)
    measure_pcap(rx, meter)
    r = meter.report()
    by_id = {f.flow_id: f for f in r.flows}
    assert r.total.lost == 6
    assert (by_id[0].lost, by_id[1].lost, by_id[4].lost, by_id[15].lost) == (1, 2, 2, 1)
    assert by_id[15].expected == 10  # the tail loss (seq 9) is known only from the sender's count
    assert r.total.reordered == 1 and r.total.duplicates == 1
    lanes = {g.lane: g for g in r.lanes}
    assert lanes[7].lost == 5 and lanes[0].lost == 1  # flows 0-7 prioritised (lane 7)


def test_profiles_schedule_as_specified(tmp_path: Path) -> None:
    flows = table1(256)
    bursts = write_pcap(tmp_path / "b.pcap", flows, Bursts(1000, 10, 100_000), packets=30, start_ns=0)
    times = [m.sec * 10**9 + m.usec for _, m in RawPcapReader(str(tmp_path / "b.pcap"))]
    assert times[:3] == [0, 10_000, 20_000]  # inside a burst: 100 kpps
    assert times[10] == 10_000_000  # next burst: 10 packets at 1 kpps average
    assert bursts.packets == 30
    rates = PerFlowRates({0: 1000.0}, default_pps=100.0)  # flow 0 ten times the others
    per = write_pcap(tmp_path / "p.pcap", flows, rates, duration_s=1.0, start_ns=0)
    assert per.sent[0] == 1000 and all(per.sent[i] == 100 for i in range(1, 16))
    svc = per_service_rates([sf.service for sf in flows], {3: 50.0}, 10.0)
    assert svc.rates[3] == 50.0 and svc.rates[2] == 10.0
    with pytest.raises(ProfileError):
        write_pcap(tmp_path / "x.pcap", flows, ConstantRate(0), packets=1)
    with pytest.raises(ScenarioError):
        write_pcap(tmp_path / "x.pcap", flows, ConstantRate(10))  # neither packets nor duration


def test_measure_survives_garbage_and_refuses_unreadable_files(tmp_path: Path) -> None:
    bad = tmp_path / "bad.pcap"
    bad.write_bytes(b"not a pcap at all")
    with pytest.raises(CaptureError):
        measure_pcap(bad, Meter())
    with pytest.raises(CaptureError):
        measure_pcap(tmp_path / "missing.pcap", Meter())
    junk = tmp_path / "junk.pcap"
    writer = RawPcapWriter(str(junk), linktype=1, nano=True)
    writer.write_header(None)
    for frame in (b"", b"\x00" * 13, b"\xff" * 200):
        writer.write_packet(frame, sec=0, usec=0)
    writer.close()
    meter = Meter()
    assert measure_pcap(junk, meter) == 3
    assert meter.report().foreign == 3


def test_cli_pcap_then_measure(tmp_path: Path) -> None:
    runner = CliRunner()
    pcap, sent, out = tmp_path / "t.pcap", tmp_path / "sent.json", tmp_path / "report.json"
    res = runner.invoke(app, ["pcap", str(pcap), "--slices", "1", "--packets", "2048", "--sent-json", str(sent)])
    assert res.exit_code == 0, res.output
    res = runner.invoke(
        app,
        [
            "measure",
            "--pcap",
            str(pcap),
            "--slices",
            "1",
            "--lanes",
            "4",
            "--sent",
            str(sent),
            "--out",
            str(out),
        ],
    )
    assert res.exit_code == 0, res.output
    report = json.loads(out.read_text())
    assert report["total"]["received"] == 2048 and report["total"]["lost"] == 0
    assert [g["lane"] for g in report["lanes"]] == [0, 1, 2, 3]
    assert all(g["received"] == 512 for g in report["lanes"])


@pytest.mark.parametrize(
    "args",
    [
        ["measure"],  # neither --pcap nor --iface
        ["measure", "--pcap", "/nonexistent.pcap"],
        ["measure", "--pcap", "x.pcap", "--lanes", "3"],
        ["pcap", "out.pcap", "--slices", "0"],
        ["pcap", "out.pcap", "--rate", "-5"],
        ["pcap", "out.pcap", "--scenario", "table1", "--size", "100000"],
        ["pcap", "out.pcap", "--dst-mac", "02:00:00:00:00"],
        ["pcap", "out.pcap", "--outer-dst", "10.0.0.300"],
    ],
)
def test_cli_bad_input_is_a_clear_error(args: list[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 2
    assert "Traceback" not in res.output


def test_cli_underlay_addresses_reach_the_frames(tmp_path: Path) -> None:
    pcap = tmp_path / "u.pcap"
    args = ["pcap", str(pcap), "--scenario", "table1", "--size", "256", "--packets", "16",
            "--dst-mac", "0a:bb:cc:dd:ee:ff", "--outer-dst", "10.77.0.2"]  # fmt: skip
    res = CliRunner().invoke(app, args)
    assert res.exit_code == 0, res.output
    frames = [frame for frame, _ in RawPcapReader(str(pcap))]
    assert len(frames) == 16
    assert all(f[:6] == bytes.fromhex("0abbccddeeff") for f in frames)
    assert all(f[30:34] == bytes([10, 77, 0, 2]) for f in frames)  # outer IPv4 destination
    meter = Meter()
    measure_pcap(pcap, meter)
    assert meter.report().total.received == 16
