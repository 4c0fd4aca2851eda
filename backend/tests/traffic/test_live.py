"""Live: send onto a veth at a set rate, capture on its peer, measure; then inject loss.

The kernel is the oracle for injected loss: a tbf qdisc on the sending end drops what
exceeds its rate and queue, counts the drops, and the meter must report exactly that many
lost packets (and the queueing delay the qdisc's limit allows).
"""

from __future__ import annotations

import json
import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any, cast

import pytest

from sliceportal.traffic.capture import open_capture, run_capture
from sliceportal.traffic.meter import Meter, MeterReport
from sliceportal.traffic.scenarios import table1, table3
from sliceportal.traffic.sender import SendResult, open_sender, send

from .conftest import Wire

pytestmark = pytest.mark.needs_root


@contextmanager
def _capturing(wire: Wire, meter: Meter, settle_s: float, **capture: Any) -> Iterator[socket.socket]:
    """A sender on the wire's tx end (yielded) while a thread captures its rx end into ``meter``
    (``capture``: run_capture's options); at the end what is still queued gets ``settle_s`` to
    arrive, then the capture stops and both ends close."""
    rx = open_capture(wire.rx, wire.netns)
    tx = open_sender(wire.tx, wire.netns)
    stop = threading.Event()
    reader = threading.Thread(target=run_capture, args=(rx, meter), kwargs={"stop": stop, **capture})
    reader.start()
    try:
        yield tx
    finally:
        threading.Event().wait(settle_s)
        stop.set()
        reader.join()
        rx.close()
        tx.close()


def _send_and_measure(wire: Wire, rate: float, duration: float) -> tuple[SendResult, MeterReport]:
    flows = table3(1)
    meter = Meter({sf.flow_id: (sf.slice_index, sf.lane(4)) for sf in flows})
    # what is still queued (the tbf queue holds ~12 ms) arrives before the capture stops
    with _capturing(wire, meter, 0.5) as tx:
        result = send(tx, flows, rate_pps=rate, duration_s=duration)
    meter.sent = dict(result.sent)
    return result, meter.report()


def test_live_rate_and_no_loss(wire: Wire) -> None:
    rate = 20_000.0
    result, report = _send_and_measure(wire, rate, 1.5)
    sender_rate = (result.packets - 1) / result.duration_s
    assert sender_rate == pytest.approx(rate, rel=0.05)
    assert result.tx_refused == 0
    assert report.total.expected == result.packets
    assert report.total.lost == 0 and report.total.duplicates == 0 and report.total.reordered == 0
    assert report.total.rx_pps == pytest.approx(sender_rate, rel=0.02)  # the same packets, received
    assert report.total.delay is not None
    assert 0 < report.total.delay.p50_us < 5_000  # a veth in one host: microseconds, not ms
    assert len(report.lanes) == 4 and all(g.lost == 0 for g in report.lanes)


def test_live_injected_loss_and_queueing_delay(wire: Wire) -> None:
    # 20 Mbit/s with a 30 kB queue: 1500 B frames at 5 kpps (60 Mbit/s) lose about 2/3,
    # and a packet that gets in waits up to 30 kB / 20 Mbit/s = 12 ms.
    wire.ip("tc", "qdisc", "add", "dev", wire.tx, "root", "tbf", "rate", "20mbit", "burst", "15k", "limit", "30k")
    result, report = _send_and_measure(wire, 5_000.0, 1.0)
    stats = json.loads(wire.ip("tc", "-s", "-j", "qdisc", "show", "dev", wire.tx))
    dropped = sum(q.get("drops", 0) for q in stats)
    assert 0.5 * result.packets < dropped < 0.8 * result.packets
    assert report.total.lost == dropped  # exactly what the kernel dropped
    assert result.tx_refused == dropped  # the sender saw every drop as ENOBUFS
    assert report.total.received == result.packets - dropped
    delay = report.total.delay
    assert delay is not None
    # A full queue most of the time: near the 12 ms bound (seen: p50 11.98 ms, max 12.1 ms).
    # The maximum is only loosely bounded: on a loaded machine the qdisc's dequeue runs in a
    # deferred softirq and a few packets wait longer (seen: max 19.7 ms at load 5 on 2 cores).
    assert 9_000 < delay.p50_us < 12_000 + 4_000
    assert delay.max_us < 12_000 + 50_000
    assert report.total.jitter_us < delay.p50_us


def test_live_interval_reports(wire: Wire) -> None:
    """Per-interval reports (the KPI service's samples) add up to the whole run, and each
    interval's rate is that of its own packets."""
    flows = table3(1)
    samples: list[MeterReport] = []
    meter = Meter({sf.flow_id: (sf.slice_index, sf.lane(4)) for sf in flows})
    sent_at: list[int] = []
    with _capturing(wire, meter, 0.3, interval_s=0.5, on_interval=samples.append) as tx:
        result = send(cast(socket.socket, _Stamping(tx, sent_at)), flows, rate_pps=10_000, duration_s=2.0)
    samples.append(meter.interval_report())  # the partial interval at the end
    assert sum(s.total.received for s in samples) == result.packets
    assert sum(s.total.lost for s in samples) == 0
    full = [i for i, s in enumerate(samples) if s.total.received > 2000]
    assert len(full) >= 3  # 2 s at 10 kpps in 0.5 s intervals: ~5000 packets each
    # The oracle is the sender's clock, not the rate it was asked for: on a loaded CI host the
    # sender stalls now and then (seen: 8 870/s in one interval). A veth is FIFO and nothing
    # is lost, so interval k holds the packets sent after those of intervals 0..k-1.
    before = [sum(s.total.received for s in samples[:i]) for i in range(len(samples))]
    for i in full[1:-1]:
        first, n = before[i], samples[i].total.received
        sent_rate = (n - 1) / ((sent_at[first + n - 1] - sent_at[first]) / 1e9)
        assert samples[i].total.rx_pps == pytest.approx(sent_rate, rel=0.02)


class _Stamping:
    """The sender's socket, noting when each frame was handed to the kernel."""

    def __init__(self, sock: socket.socket, sent_at: list[int]) -> None:
        self._sock, self._sent_at = sock, sent_at

    def send(self, frame: bytes) -> int:
        self._sent_at.append(time.time_ns())
        return self._sock.send(frame)


def test_cli_streams_interval_lines_from_its_own_process(wire: Wire, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """``sliceportal traffic measure --interval``: one JSON line per interval on stdout."""
    import subprocess
    import sys

    final = tmp_path / "final.json"
    cmd = [sys.executable, "-c", "from sliceportal.traffic.cli import app; app()", "measure",
           "--iface", wire.rx, "--netns", wire.netns, "--duration", "6", "--interval", "0.5",
           "--scenario", "table1", "--size", "256", "--out", str(final)]  # fmt: skip
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert proc.stderr is not None
        for line in proc.stderr:
            if line.startswith("capturing on"):
                break
        tx = open_sender(wire.tx, wire.netns)
        result = send(tx, table1(256), rate_pps=5_000, duration_s=1.5)
        tx.close()
        stdout, _ = proc.communicate(timeout=30)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 0
    lines = [MeterReport.model_validate_json(x) for x in stdout.splitlines() if x.strip()]
    # 6 s in 0.5 s intervals: the 1.5 s send fits in it even when this process starts it late
    assert len(lines) >= 5
    last = MeterReport.model_validate_json(final.read_text())
    assert sum(r.total.received for r in lines) + last.total.received == result.packets
    assert all(r.total.lost == 0 for r in [*lines, last])
    assert {g.lane for g in lines[-1].lanes} <= {0, 7}


def test_the_meters_own_drops_are_counted_not_blamed_on_the_network(wire: Wire) -> None:
    """A capture socket that overflows reports its drops (PACKET_STATISTICS) separately."""
    import socket as socket_mod

    flows = table1(1500)
    rx = open_capture(wire.rx, wire.netns)
    rx.setsockopt(socket_mod.SOL_SOCKET, socket_mod.SO_RCVBUF, 64 << 10)  # room for a few dozen frames
    tx = open_sender(wire.tx, wire.netns)
    try:
        result = send(tx, flows, rate_pps=None, packets=2000)  # nobody reads while this runs
        meter = Meter(sent=result.sent)
        stats = run_capture(rx, meter, idle_s=0.3, duration_s=5)
    finally:
        rx.close()
        tx.close()
    report = meter.report()
    assert stats.socket_drops > 0
    assert report.total.received + stats.socket_drops == result.packets  # every frame accounted for
    assert report.total.lost == stats.socket_drops


def test_live_bursts_follow_the_profile(wire: Wire) -> None:
    from sliceportal.traffic.profiles import Bursts
    from sliceportal.traffic.sender import send_profile

    flows = table1(512)
    meter = Meter()
    with _capturing(wire, meter, 0.3) as tx:
        # bursts of 100 packets at 200 kpps every 20 ms: 5 kpps on average, 50 bursts in 1 s
        result = send_profile(tx, flows, Bursts(5_000, 100, 200_000), duration_s=1.0)
    assert result.packets == 5000 and sum(result.sent.values()) == 5000
    expected_span = 49 * 0.020 + 99 / 200_000
    assert result.duration_s == pytest.approx(expected_span, rel=0.02)
    meter.sent = dict(result.sent)
    report = meter.report()
    assert report.total.received == 5000 and report.total.lost == 0
