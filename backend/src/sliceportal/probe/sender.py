"""The STAMP Session-Sender: one probe flow per slice lane, KPI samples per lane and interval.

Each lane's flow has its own socket: the lane's DSCP in the IP header (``IP_TOS``) and, when
given, its own source port, so the data plane's classifier puts the probes into that lane
(the reflector marks its replies with the same DSCP). Probes leave at ``rate_pps`` per lane.

Per lane and interval (the interval a probe was *sent* in):

- two-way delay of each returned probe: (t4 - t1) - (t3 - t2), t1/t4 the sender's send and
  kernel receive times, t2/t3 the reflector's receive and send times (its residence time is
  excluded; each difference is taken on one clock, so the clocks need not agree);
- mean, p50 and p99 of those delays (linear interpolation between ranks);
- jitter: the mean absolute difference of consecutive delays in send order (the |D(i-1, i)|
  of RFC 3550 §6.4.1, averaged over the interval instead of its 1/16 running filter);
- loss: probes sent minus replies received within ``timeout_s`` of the end of the interval,
  as a percentage. A reply after that, or a second reply, is counted once in ``late``: the
  probe stays lost, the sample is never revised.

An interval's sample is emitted when every probe of it has returned or ``timeout_s`` after
its end, whichever comes first.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import re
import select
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sliceportal.probe.sockets import receive, udp_socket
from sliceportal.probe.wire import (
    PACKET_SIZE,
    ReflectorPacket,
    SenderPacket,
    WireError,
    ns_from_ntp,
    ntp_from_ns,
)

MAX_LANE = 7  # the catalogue's lanes (seed 000 Table 1)
_LANE_SPEC = re.compile(r"^(\d+)=(\d+)(?::(\d+))?$")
_NS = 1_000_000_000
POLL_CAP_NS = 50_000_000  # the loop wakes at least this often (stop, deadlines)


class ProbeError(ValueError):
    """Bad probe settings, naming the option."""


@dataclass(frozen=True)
class LaneFlow:
    lane: int
    dscp: int
    port: int = 0  # the flow's source port; 0: any the kernel picks

    @classmethod
    def parse(cls, spec: str) -> LaneFlow:
        """``lane=dscp[:port]``, e.g. ``2=46`` or ``2=46:40002``."""
        m = _LANE_SPEC.match(spec.strip())
        if not m:
            raise ProbeError(f"--lane {spec!r}: expected lane=dscp[:port], e.g. 2=46 or 2=46:40002")
        lane, dscp, port = int(m[1]), int(m[2]), int(m[3] or 0)
        if lane > MAX_LANE:
            raise ProbeError(f"--lane {spec!r}: lane must be 0 … {MAX_LANE}")
        if dscp > 63:
            raise ProbeError(f"--lane {spec!r}: DSCP must be 0 … 63")
        if port > 65535:
            raise ProbeError(f"--lane {spec!r}: port must be 1 … 65535")
        return cls(lane, dscp, port)


@dataclass(frozen=True)
class LaneSample:
    """One lane's interval, with the ingest API's field names (``schemas.kpis.IngestPoint``)."""

    lane: int
    ts: datetime  # end of the interval
    interval_s: float
    tx_packets: int
    rx_packets: int
    tx_bytes: int  # UDP payload octets of the probes
    rx_bytes: int
    throughput_bps: float  # of the probes themselves
    loss_pct: float
    delay_mean_ms: float | None
    delay_p50_ms: float | None
    delay_p99_ms: float | None
    jitter_ms: float | None

    def point(self, slice_id: int, backend_id: int) -> dict[str, Any]:
        return {
            "slice_id": slice_id,
            "backend_id": backend_id,
            "source": "probe",
            "lane": self.lane,
            "ts": self.ts.isoformat(),
            "interval_s": self.interval_s,
            "tx_packets": self.tx_packets,
            "rx_packets": self.rx_packets,
            "tx_bytes": self.tx_bytes,
            "rx_bytes": self.rx_bytes,
            "throughput_bps": self.throughput_bps,
            "loss_pct": self.loss_pct,
            "delay_mean_ms": self.delay_mean_ms,
            "delay_p50_ms": self.delay_p50_ms,
            "delay_p99_ms": self.delay_p99_ms,
            "jitter_ms": self.jitter_ms,
        }


def percentile(ordered: list[float], q: float) -> float:
    """The q-quantile (0 … 1) of sorted values, linear between ranks (numpy's default)."""
    pos = (len(ordered) - 1) * q
    lo = math.floor(pos)
    hi = min(lo + 1, len(ordered) - 1)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


def summarise(
    lane: int, ts: datetime, interval_s: float, tx: int, delays_in_send_order: list[float], size: int
) -> LaneSample:
    """The sample of one lane's interval from its probes sent and its delays (ms) returned."""
    rx = len(delays_in_send_order)
    ordered = sorted(delays_in_send_order)
    steps = [abs(b - a) for a, b in itertools.pairwise(delays_in_send_order)]
    return LaneSample(
        lane=lane,
        ts=ts,
        interval_s=round(interval_s, 6),
        tx_packets=tx,
        rx_packets=rx,
        tx_bytes=tx * size,
        rx_bytes=rx * size,
        throughput_bps=round(rx * size * 8 / interval_s, 3),
        loss_pct=round(100.0 * (tx - rx) / tx, 4) if tx else 0.0,
        delay_mean_ms=round(sum(ordered) / rx, 6) if rx else None,
        delay_p50_ms=round(percentile(ordered, 0.5), 6) if rx else None,
        delay_p99_ms=round(percentile(ordered, 0.99), 6) if rx else None,
        jitter_ms=round(sum(steps) / len(steps), 6) if steps else None,
    )


@dataclass
class _Interval:
    tx: int = 0
    delays_ms: dict[int, float] = field(default_factory=dict)  # by sequence number


@dataclass
class _Lane:
    flow: LaneFlow
    sock: socket.socket
    next_seq: int = 0
    pending: dict[int, tuple[int, int]] = field(default_factory=dict)  # seq -> (t1 ns, interval)
    intervals: dict[int, _Interval] = field(default_factory=dict)
    sent: int = 0
    returned: int = 0
    late: int = 0  # replies after their interval was emitted, duplicates, strangers' sequence numbers


@dataclass(frozen=True)
class LaneTotals:
    lane: int
    sent: int
    returned: int
    late: int


class Sender:
    def __init__(
        self,
        reflector: tuple[str, int],
        flows: list[LaneFlow],
        *,
        bind: str = "0.0.0.0",
        rate_pps: float = 10.0,
        interval_s: float = 1.0,
        timeout_s: float = 1.0,
        size: int = PACKET_SIZE,
        transmit: Callable[[LaneFlow, bytes], None] | None = None,
    ) -> None:
        """``transmit``: sends a lane's test packet another way than its socket (the testbed
        wraps it into a subscriber's tunnelled frame); the replies still arrive on the socket."""
        if not flows:
            raise ProbeError("--lane: at least one lane")
        if len({f.lane for f in flows}) != len(flows):
            raise ProbeError("--lane: each lane once")
        if not 0 < rate_pps <= 100_000:
            raise ProbeError("--rate: 0 < packets/s per lane ≤ 100000")
        if not 0 < interval_s <= 3600:
            raise ProbeError("--interval: 0 < seconds ≤ 3600")
        if not 0 <= timeout_s <= 60:
            raise ProbeError("--timeout: 0 … 60 seconds")
        if not PACKET_SIZE <= size <= 1472:
            raise ProbeError(f"--size: {PACKET_SIZE} … 1472 octets (UDP payload)")
        self.rate_pps, self.interval_s, self.timeout_s, self.size = rate_pps, interval_s, timeout_s, size
        self._transmit = transmit
        self.lanes: list[_Lane] = []
        try:
            for f in flows:
                sock = udp_socket(bind, f.port, tos=f.dscp << 2)
                self.lanes.append(_Lane(f, sock))
                # connected: only the reflector's datagrams reach this socket
                sock.connect(reflector)
                sock.setblocking(False)
        except BaseException:
            self.close()
            raise
        self._by_fd = {lane.sock.fileno(): lane for lane in self.lanes}

    def ports(self) -> dict[int, int]:
        """Each lane's local port (where its replies arrive), by lane."""
        return {x.flow.lane: int(x.sock.getsockname()[1]) for x in self.lanes}

    def close(self) -> None:
        for lane in self.lanes:
            lane.sock.close()

    def totals(self) -> list[LaneTotals]:
        return [LaneTotals(x.flow.lane, x.sent, x.returned, x.late) for x in self.lanes]

    def run(
        self,
        sink: Callable[[list[LaneSample]], None],
        *,
        duration_s: float | None = None,
        stop: threading.Event | None = None,
    ) -> list[LaneTotals]:
        """Probe until ``duration_s`` has passed or ``stop`` is set, then wait for the last
        replies (at most ``timeout_s``); ``sink`` gets each interval's samples, lanes in order."""
        stop = stop or threading.Event()
        period = int(_NS / self.rate_pps)
        interval = int(self.interval_s * _NS)
        timeout = int(self.timeout_s * _NS)
        start, start_wall = time.monotonic_ns(), time.time_ns()
        send_until = start + int(duration_s * _NS) if duration_s is not None else None
        # the lanes' probes interleave instead of leaving in one burst
        next_send = [start + i * period // len(self.lanes) for i in range(len(self.lanes))]
        sending, send_end = True, 0
        emitted = 0  # intervals before this one have been emitted
        while True:
            now = time.monotonic_ns()
            if sending and (stop.is_set() or (send_until is not None and now >= send_until)):
                sending, send_end = False, min(now, send_until or now)
            if sending:
                for i, lane in enumerate(self.lanes):
                    if now - next_send[i] > interval:  # stalled (a suspended process): skip, never burst
                        next_send[i] = now
                    while next_send[i] <= now:
                        self._send(lane, (next_send[i] - start) // interval)
                        next_send[i] += period
            wait = POLL_CAP_NS
            if sending:
                wait = min(wait, max(0, min(next_send) - time.monotonic_ns()))
            ready, _, _ = select.select([x.sock for x in self.lanes], [], [], wait / _NS)
            for sock in ready:
                self._collect(self._by_fd[sock.fileno()], emitted)
            # emit finished intervals in order
            now = time.monotonic_ns()
            # the last interval all of whose probes have been sent (a send due before its end
            # may still be ahead of this iteration: the loop runs late under load)
            last = (send_end - start - 1) // interval if not sending else (min(next_send) - start) // interval - 1
            while emitted <= last:
                end = start + (emitted + 1) * interval
                if not sending:
                    end = min(end, send_end)
                outstanding = any(
                    iv.tx > len(iv.delays_ms) for x in self.lanes if (iv := x.intervals.get(emitted)) is not None
                )
                if outstanding and now < end + timeout:
                    break
                self._emit(emitted, start_wall + (end - start), (end - start - emitted * interval) / _NS, sink)
                emitted += 1
            if not sending and emitted > last:
                return self.totals()

    def _send(self, lane: _Lane, interval: int) -> None:
        seq = lane.next_seq
        lane.next_seq = (seq + 1) & 0xFFFF_FFFF
        t1 = time.time_ns()
        # a full socket buffer, or an ICMP port unreachable from an earlier probe: the probe
        # did not leave (or left and was refused); it counts as sent and lost like any other
        with contextlib.suppress(BlockingIOError, ConnectionRefusedError):
            data = SenderPacket(seq, ntp_from_ns(t1)).pack(self.size)
            if self._transmit is None:
                lane.sock.send(data)
            else:
                self._transmit(lane.flow, data)
        lane.pending[seq] = (t1, interval)
        lane.intervals.setdefault(interval, _Interval()).tx += 1
        lane.sent += 1

    def _collect(self, lane: _Lane, emitted: int) -> None:
        while True:
            try:
                got = receive(lane.sock)
            except (BlockingIOError, ConnectionRefusedError):
                return
            try:
                reply = ReflectorPacket.unpack(got.data)
            except WireError:
                lane.late += 1
                continue
            sent = lane.pending.pop(reply.sender_seq, None)
            if sent is None or sent[1] < emitted:
                lane.late += 1
                continue
            t1, interval = sent
            residence = ns_from_ntp(reply.timestamp) - ns_from_ntp(reply.receive_timestamp)
            delay_ns = max(0, (got.rx_ns - t1) - max(0, residence))
            lane.intervals[interval].delays_ms[reply.sender_seq] = delay_ns / 1e6
            lane.returned += 1

    def _emit(self, index: int, end_wall_ns: int, length_s: float, sink: Callable[[list[LaneSample]], None]) -> None:
        ts = datetime.fromtimestamp(end_wall_ns / _NS, UTC)
        samples = []
        for lane in self.lanes:
            iv = lane.intervals.pop(index, None)
            # what did not return is lost for good: a later reply is 'late', not a revision
            for seq in [s for s, (_, i) in lane.pending.items() if i == index]:
                del lane.pending[seq]
            if iv is None or iv.tx == 0:
                continue
            delays = [iv.delays_ms[s] for s in sorted(iv.delays_ms)]
            samples.append(summarise(lane.flow.lane, ts, length_s, iv.tx, delays, self.size))
        if samples:
            sink(samples)
