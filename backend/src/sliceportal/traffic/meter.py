"""Receiver-side measurement: per flow loss, one-way delay, jitter, reordering; per slice/lane.

Pure: observations go in as (flow id, sequence, send ns, receive ns, bytes) and a report
comes out; where they come from (a pcap, a live socket, a simulator's cycle counts) is
``capture.py``'s business. Definitions (docs/traffic.md says the same for users):

- one-way delay = receive time - send time of each unique packet (ns; sender and receiver
  share one clock on this machine, CLOCK_REALTIME);
- p50 / p99 = nearest-rank percentiles: the ceil(p/100 * n)-th smallest delay;
- jitter = RFC 3550 §6.4.1 interarrival jitter in arrival order: with transit time
  T = receive - send and D = T_i - T_(i-1), J += (|D| - J) / 16, reported after the last packet;
- duplicate = a sequence number already received (excluded from every other figure); with
  ``interval_report`` only the last 65536 numbers of a flow are remembered;
- reordered = a packet whose sequence number is below the highest already received;
- lost = expected - unique received, where expected is the sender's count when known and
  otherwise highest sequence + 1 (sequences start at 0); per interval (``interval_report``)
  expected is the advance of the highest sequence during the interval.
"""

from __future__ import annotations

import math
from array import array
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel

from sliceportal.traffic.wire import locate


def percentile(sorted_values: Sequence[int], p: float) -> int:
    """Nearest-rank percentile of an ascending sequence (p in (0, 100])."""
    if not sorted_values:
        raise ValueError("percentile of no values")
    if not 0 < p <= 100:
        raise ValueError(f"percentile {p} outside (0, 100]")
    rank = math.ceil(p / 100 * len(sorted_values))
    return sorted_values[max(rank, 1) - 1]


def rfc3550_jitter(transits: Iterable[int]) -> float:
    """Interarrival jitter of transit times given in arrival order (same unit as the input)."""
    jitter = 0.0
    prev: int | None = None
    for t in transits:
        if prev is not None:
            jitter += (abs(t - prev) - jitter) / 16
        prev = t
    return jitter


class SeqSet:
    """The sequence numbers a flow has delivered: one bit each, from ``base`` up.

    A set of ints costs ~70 bytes per packet (600 MB for a full Table 3 capture); a bitmap
    costs one bit. A number far above the bitmap (a corrupt or hostile header) goes to a
    small bounded set instead of growing the bitmap to it, and numbers below ``base``
    (forgotten by ``forget_below`` on long runs) cannot be recognised as duplicates.
    """

    __slots__ = ("base", "bits", "far")
    MAX_GROW_BYTES = 1 << 17  # grow the bitmap by at most 1 Mi sequence numbers at once
    MAX_FAR = 4096

    def __init__(self, base: int = 0) -> None:
        self.base = base - base % 8
        self.bits = bytearray()
        self.far: set[int] = set()

    def add(self, seq: int) -> bool:
        """Record ``seq``; False when it was already recorded (a duplicate)."""
        i = seq - self.base
        if i < 0:
            return True
        byte = i >> 3
        if byte >= len(self.bits):
            if byte >= len(self.bits) + self.MAX_GROW_BYTES:
                if seq in self.far:
                    return False
                if len(self.far) >= self.MAX_FAR:
                    self.far.clear()  # bounded memory beats perfect duplicate detection here
                self.far.add(seq)
                return True
            self.bits.extend(bytes(max(byte + 1 - len(self.bits), len(self.bits))))
        bit = 1 << (i & 7)
        if self.bits[byte] & bit:
            return False
        self.bits[byte] |= bit
        return True

    def forget_below(self, seq: int) -> None:
        drop = min(max(seq - self.base, 0) >> 3, len(self.bits))
        if drop:
            del self.bits[:drop]
            self.base += drop * 8
        self.far = {q for q in self.far if q >= self.base}


@dataclass(slots=True)
class FlowAccumulator:
    """Running state of one flow; ``add`` is the per-packet hot path."""

    received: int = 0  # unique packets
    base_seq: int = -1  # highest sequence before this interval (-1: from the start)
    fresh: int = 0  # unique packets above base_seq (what loss is counted against)
    duplicates: int = 0
    reordered: int = 0
    bytes: int = 0
    max_seq: int = -1
    jitter: float = 0.0
    prev_transit: int | None = None
    first_rx_ns: int = 0
    last_rx_ns: int = 0
    seen: SeqSet = field(default_factory=SeqSet)
    transits: array[int] = field(default_factory=lambda: array("q"))

    def add(self, seq: int, send_ns: int, recv_ns: int, size: int) -> None:
        if not self.seen.add(seq):
            self.duplicates += 1
            return
        transit = recv_ns - send_ns
        if self.received == 0:
            self.first_rx_ns = recv_ns
        if self.prev_transit is not None:
            self.jitter += (abs(transit - self.prev_transit) - self.jitter) / 16
        self.prev_transit = transit
        self.received += 1
        if seq > self.base_seq:
            self.fresh += 1
        self.bytes += size
        self.last_rx_ns = max(self.last_rx_ns, recv_ns)
        if seq < self.max_seq:
            self.reordered += 1
        else:
            self.max_seq = seq
        self.transits.append(transit)

    def rolled_over(self, keep_seen: int) -> FlowAccumulator:
        """A fresh interval that continues this one's sequence, jitter and duplicate state."""
        top = max(self.max_seq, self.base_seq)
        self.seen.forget_below(top - keep_seen)
        seen = self.seen
        return FlowAccumulator(base_seq=top, max_seq=top, jitter=self.jitter, prev_transit=self.prev_transit, seen=seen)


class DelayStats(BaseModel):
    """One-way delay in microseconds over the unique packets received."""

    mean_us: float
    p50_us: float
    p99_us: float
    max_us: float
    min_us: float


class FlowStats(BaseModel):
    flow_id: int
    slice_index: int | None
    lane: int | None
    sent: int | None  # the sender's count, when the meter was given it
    expected: int
    received: int
    lost: int
    loss_pct: float
    duplicates: int
    reordered: int
    bytes: int
    delay: DelayStats | None
    jitter_us: float
    rx_pps: float  # unique packets / (last - first arrival); 0 with fewer than two


class GroupStats(BaseModel):
    """Flows pooled: counts summed, delay percentiles over all their packets."""

    slice_index: int | None
    lane: int | None
    flows: int
    expected: int
    received: int
    lost: int
    loss_pct: float
    duplicates: int
    reordered: int
    bytes: int
    delay: DelayStats | None
    jitter_us: float  # mean of the flows' RFC 3550 jitter, weighted by packets received
    jitter_max_us: float
    rx_pps: float
    rx_bps: float


class MeterReport(BaseModel):
    flows: list[FlowStats]
    slices: list[GroupStats]
    lanes: list[GroupStats]  # per (slice, lane)
    total: GroupStats
    foreign: int  # frames that were not ours (other protocols, malformed, truncated)
    unexpected_flows: list[int]  # flow ids received that the mapping does not know
    # frames the capture socket itself dropped (live only): loss above this is the network's
    capture_drops: int = 0


def _delay_stats(transits: Sequence[int]) -> DelayStats | None:
    if not transits:
        return None
    ordered = sorted(transits)
    return DelayStats(
        mean_us=sum(ordered) / len(ordered) / 1e3,
        p50_us=percentile(ordered, 50) / 1e3,
        p99_us=percentile(ordered, 99) / 1e3,
        max_us=ordered[-1] / 1e3,
        min_us=ordered[0] / 1e3,
    )


FlowPlace = tuple[int, int]  # (slice index, lane)


class Meter:
    """Per-flow accumulators plus the reference the report is computed against.

    ``places`` maps flow id -> (slice, lane) for aggregation; ``sent`` the sender's per-flow
    counts (flows in ``sent`` that never arrive are reported with 100 % loss).
    """

    def __init__(self, places: Mapping[int, FlowPlace] | None = None, sent: Mapping[int, int] | None = None):
        self.places = dict(places or {})
        self.sent = dict(sent or {})
        self.flows: dict[int, FlowAccumulator] = {}
        self.foreign = 0

    def add(self, flow_id: int, seq: int, send_ns: int, recv_ns: int, size: int = 0) -> None:
        acc = self.flows.get(flow_id)
        if acc is None:
            acc = self.flows[flow_id] = FlowAccumulator()
        acc.add(seq, send_ns, recv_ns, size)

    def add_foreign(self, count: int = 1) -> None:
        self.foreign += count

    def add_frame(self, frame: bytes, recv_ns: int, send_ns: int | None = None) -> bool:
        """Parse ``frame`` and add it; False (and counted foreign) when it is not ours.

        ``send_ns`` overrides the payload's send time: the NetFPGA simulator knows both the
        input and the output cycle of a frame (see ``cycles_to_ns``).
        """
        found = locate(frame)
        if found is None:
            self.foreign += 1
            return False
        flow_id, seq, stamped = found
        self.add(flow_id, seq, stamped if send_ns is None else send_ns, recv_ns, len(frame))
        return True

    def interval_report(self, keep_seen: int = 65536, sent_before: Mapping[int, int] | None = None) -> MeterReport:
        """The report of the packets since the previous call, then start the next interval.

        For the KPI service's per-interval samples: loss in an interval counts the sequence
        numbers above the highest one of the previous interval that did not arrive (a packet
        arriving after its interval closed is reordered, not un-lost); jitter and duplicate
        detection carry over. The sender's whole-run counts do not apply to intervals and are dropped.

        ``sent_before``: per flow, the packets its sender had sent a grace period ago (longer
        than any queue holds them). For a flow this meter has received before, sequences
        below that count as expected in this interval even when none of them arrived, so a
        lane a data plane starves shows 100 % loss instead of no data.
        """
        self.sent = {}
        for flow_id, n in (sent_before or {}).items():
            acc = self.flows.get(flow_id)  # only flows this meter receives (a plane may have several)
            if acc is not None:
                acc.max_seq = max(acc.max_seq, n - 1)
        report = self.report()
        self.flows = {f: acc.rolled_over(keep_seen) for f, acc in self.flows.items()}
        self.foreign = 0
        return report

    def report(self) -> MeterReport:
        flow_ids = sorted(set(self.flows) | set(self.sent))
        empty = FlowAccumulator()
        stats = [self._flow_stats(f, self.flows.get(f, empty)) for f in flow_ids]
        groups: dict[tuple[int | None, int | None], list[int]] = {}
        slices: dict[int | None, list[int]] = {}
        for f in flow_ids:
            s, lane = self.places.get(f, (None, None))
            groups.setdefault((s, lane), []).append(f)
            slices.setdefault(s, []).append(f)
        return MeterReport(
            flows=stats,
            slices=[self._group(s, None, fs) for s, fs in sorted(slices.items(), key=_none_last)],
            lanes=[self._group(s, lane, fs) for (s, lane), fs in sorted(groups.items(), key=_none_last)],
            total=self._group(None, None, flow_ids),
            foreign=self.foreign,
            unexpected_flows=sorted(f for f in self.flows if self.places and f not in self.places),
        )

    def _expected(self, flow_id: int, acc: FlowAccumulator) -> int:
        return self.sent.get(flow_id, acc.max_seq - acc.base_seq)

    def _lost(self, flow_id: int, acc: FlowAccumulator) -> int:
        return max(self._expected(flow_id, acc) - acc.fresh, 0)

    def _flow_stats(self, flow_id: int, acc: FlowAccumulator) -> FlowStats:
        s, lane = self.places.get(flow_id, (None, None))
        expected = self._expected(flow_id, acc)
        lost = self._lost(flow_id, acc)
        return FlowStats(
            flow_id=flow_id,
            slice_index=s,
            lane=lane,
            sent=self.sent.get(flow_id),
            expected=expected,
            received=acc.received,
            lost=lost,
            loss_pct=100 * lost / expected if expected else 0.0,
            duplicates=acc.duplicates,
            reordered=acc.reordered,
            bytes=acc.bytes,
            delay=_delay_stats(acc.transits),
            jitter_us=acc.jitter / 1e3,
            rx_pps=_rate(acc.received, acc.first_rx_ns, acc.last_rx_ns),
        )

    def _group(self, slice_index: int | None, lane: int | None, flow_ids: Sequence[int]) -> GroupStats:
        empty = FlowAccumulator()
        accs = [(f, self.flows.get(f, empty)) for f in flow_ids]
        expected = sum(self._expected(f, a) for f, a in accs)
        received = sum(a.received for _, a in accs)
        lost = sum(self._lost(f, a) for f, a in accs)
        pooled: array[int] = array("q")
        for _, a in accs:
            pooled.extend(a.transits)
        live = [a for _, a in accs if a.received]
        first = min((a.first_rx_ns for a in live), default=0)
        last = max((a.last_rx_ns for a in live), default=0)
        span = (last - first) / 1e9
        total_bytes = sum(a.bytes for _, a in accs)
        return GroupStats(
            slice_index=slice_index,
            lane=lane,
            flows=len(flow_ids),
            expected=expected,
            received=received,
            lost=lost,
            loss_pct=100 * lost / expected if expected else 0.0,
            duplicates=sum(a.duplicates for _, a in accs),
            reordered=sum(a.reordered for _, a in accs),
            bytes=total_bytes,
            delay=_delay_stats(pooled),
            jitter_us=sum(a.jitter * a.received for a in live) / received / 1e3 if received else 0.0,
            jitter_max_us=max((a.jitter for a in live), default=0.0) / 1e3,
            rx_pps=_rate(received, first, last),
            rx_bps=8 * total_bytes / span if span > 0 else 0.0,
        )


def cycles_to_ns(cycles: int, clock_hz: float) -> int:
    """A simulated clock-cycle count as ns (NetFPGA SUME's datapath clock is 200 MHz: 5 ns)."""
    return round(cycles * 1e9 / clock_hz)


def _rate(count: int, first_ns: int, last_ns: int) -> float:
    # n packets arriving over [first, last] are n - 1 intervals.
    return (count - 1) / ((last_ns - first_ns) / 1e9) if count > 1 and last_ns > first_ns else 0.0


def _none_last(item: tuple[object, object]) -> tuple[object, ...]:
    key = item[0] if isinstance(item[0], tuple) else (item[0],)
    return tuple((v is None, v if v is not None else 0) for v in key)
