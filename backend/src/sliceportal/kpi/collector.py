"""The KPI collector: every registered backend's own counters into ``source='counters'`` samples.

Each interval the collector reads every backend's counters through its driver (in parallel,
each read bounded by the interval) and turns the difference to the previous read into one
sample per (slice, backend, catalogue lane):

* where the driver counts per slice and lane (``Counters.slice_lanes``, "irslice/lane"), from
  those; else from its per-rule counters folded through the rule set it holds (every rule
  carries its slice and target lane, ``kpi.counters.rule_places``), with the slice's drops and
  ECN marks (``Counters.slices``) added when the slice's traffic went to one lane only;
* throughput from the bytes that left the lane (``tx_bytes``), or the bytes that entered it
  where the data plane does not count its egress; loss as the plane's own drops against the
  packets that entered; drops by cause; ECN marks; queueing delay (mean, p50, p99) from the
  delay histogram's difference (``kpi.delay``), ``None`` where the plane does not measure it.

Counters never turn into spikes or negative rates: a changed ``epoch``, a changed rule set
or any counter going backwards (other than a wrap-around) is a restart, and that interval
yields no sample — the read becomes the new baseline. Every driver today counts in 64 bits
(the NetFPGA driver joins its 32-bit CSR halves), so a counter that goes backwards wraps only
from the top half of its range to a value below a quarter of it (``counter_delta``);
``COUNTER_BITS`` narrows that per driver. A backend that does not answer within the interval,
or whose driver is busy with a push, yields no sample (the dashboards show no data, never 0);
its next answer is compared with the last one it gave, over the time between them.

A lane with no packet in, out or dropped in the interval yields no sample (like the testbed's
meter). All samples of an interval go to the database in one ``kpi.store.ingest``.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures import TimeoutError as FutureTimeout
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from sqlalchemy import select
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.core.loops import LoopRegistry, PeriodicDuty
from sliceportal.drivers.contract import Counters, DelayHistogram, DriverError, LaneCounters
from sliceportal.kpi.counters import Place, rule_places
from sliceportal.kpi.delay import DelayDelta, delay_delta, delay_stats
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend
from sliceportal.models.queries import current_rule_set
from sliceportal.models.slicing import HEALTH_DOWN

log = logging.getLogger(__name__)

# one reading of a backend's counters (its own session); None when its driver is busy (a
# push); raises DriverError when the data plane does not answer
ReadCounters = Callable[[Session, Backend], Counters | None]
COUNTER_BITS: dict[str, int] = {}  # driver -> counter width where narrower than 64 bits
DEFAULT_BITS = 64


class CounterReset(Exception):
    """A counter went backwards without wrapping: the data plane restarted."""


def counter_delta(now: int, before: int, bits: int = DEFAULT_BITS) -> int:
    """``now - before`` for a monotonic counter of ``bits`` bits; a counter that went backwards
    from the top half of its range to below a quarter of it wrapped, otherwise it was reset
    (``CounterReset``)."""
    if now >= before:
        return now - before
    top = 1 << bits
    wrapped = now + top - before
    if before >= top >> 1 and wrapped < top >> 2:
        return wrapped
    raise CounterReset(f"counter went from {before} to {now}")


@dataclass
class LaneDelta:
    """One interval of one lane (or several folded into one place)."""

    packets: int = 0
    bytes: int = 0
    tx_packets: int | None = None
    tx_bytes: int | None = None
    drops: dict[str, int] = field(default_factory=dict)
    ecn_marks: int = 0
    delay: DelayDelta | None = None
    delay_measured: bool = False  # the plane reports a histogram here (even an empty interval's)

    def add(self, other: LaneDelta) -> None:
        self.packets += other.packets
        self.bytes += other.bytes
        self.tx_packets = _sum_opt(self.tx_packets, other.tx_packets)
        self.tx_bytes = _sum_opt(self.tx_bytes, other.tx_bytes)
        for reason, n in other.drops.items():
            self.drops[reason] = self.drops.get(reason, 0) + n
        self.ecn_marks += other.ecn_marks
        self.delay_measured = self.delay_measured or other.delay_measured
        if other.delay is not None:
            self.delay = other.delay if self.delay is None else _merge_delay(self.delay, other.delay)


def _sum_opt(a: int | None, b: int | None) -> int | None:
    return a + b if a is not None and b is not None else a if b is None else b


def _merge_delay(a: DelayDelta, b: DelayDelta) -> DelayDelta | None:
    if a.unit_ns != b.unit_ns:
        return None  # two units in one place: no honest merge
    return DelayDelta(
        a.unit_ns,
        a.count + b.count,
        a.sum + b.sum,
        tuple(x + y for x, y in zip(a.buckets, b.buckets, strict=True)),
        max(a.max_ever, b.max_ever),
    )


def _hist_delta(now: DelayHistogram, before: DelayHistogram | None, bits: int) -> DelayDelta:
    """Like ``delay.delay_delta`` with wrap-around per field; a restart raises ``CounterReset``."""
    if before is not None and before.unit_ns != now.unit_ns:
        raise CounterReset("the delay unit changed")
    b = before or DelayHistogram(unit_ns=now.unit_ns)
    d = delay_delta(now, b)
    if d is not None:
        return d
    return DelayDelta(
        now.unit_ns,
        counter_delta(now.count, b.count, bits),
        counter_delta(now.sum, b.sum, bits),
        tuple(counter_delta(x, y, bits) for x, y in zip(now.buckets, b.buckets, strict=True)),
        now.max,
    )


def lane_delta(now: LaneCounters, before: LaneCounters | None, bits: int = DEFAULT_BITS) -> LaneDelta:
    """One lane's interval; a lane absent from the previous read started at zero."""
    b = before or LaneCounters()

    def opt(x: int | None, y: int | None) -> int | None:
        return None if x is None else counter_delta(x, y or 0, bits)

    drops = {k: counter_delta(v, b.drops.get(k, 0), bits) for k, v in now.drops.items()}
    if any(k not in now.drops for k, v in b.drops.items() if v):
        raise CounterReset("a drop cause disappeared")
    return LaneDelta(
        packets=counter_delta(now.packets, b.packets, bits),
        bytes=counter_delta(now.bytes, b.bytes, bits),
        tx_packets=opt(now.tx_packets, b.tx_packets),
        tx_bytes=opt(now.tx_bytes, b.tx_bytes),
        drops={k: v for k, v in drops.items() if v},
        ecn_marks=counter_delta(now.ecn_marks, b.ecn_marks, bits),
        delay=None if now.delay is None else _hist_delta(now.delay, b.delay, bits),
        delay_measured=now.delay is not None,
    )


def lane_places(ir: Mapping[str, Any], explanation: Mapping[str, Any]) -> dict[str, Place]:
    """ "irslice/target lane" (``Counters.slice_lanes``) -> (portal slice id, catalogue lane)."""
    ref_of = {s["slice_id"]: s["ref"] for s in ir.get("slices", [])}
    out: dict[str, Place] = {}
    for s in explanation.get("slices", []):
        irs = next((sid for sid, ref in ref_of.items() if ref == s["ref"]), None)
        if irs is None:
            continue
        for cat, target in s.get("lane_map", []):
            out.setdefault(f"{irs}/{target}", (s["ref"], cat))  # several folded together: the first
    return out


def interval_deltas(
    now: Counters, before: Counters, ir: Mapping[str, Any], explanation: Mapping[str, Any], bits: int = DEFAULT_BITS
) -> dict[Place, LaneDelta]:
    """(slice, catalogue lane) -> the interval between two reads of one backend holding one
    rule set; raises ``CounterReset`` when the data plane restarted in between."""
    if now.epoch != before.epoch:
        raise CounterReset(f"epoch {before.epoch} -> {now.epoch}")
    out: dict[Place, LaneDelta] = {}
    if now.slice_lanes:
        for key, place in lane_places(ir, explanation).items():
            if key in now.slice_lanes:
                out.setdefault(place, LaneDelta()).add(
                    lane_delta(now.slice_lanes[key], before.slice_lanes.get(key), bits)
                )
        return out
    places = rule_places(ir, explanation)
    slice_of_rule = {i: r["action"]["slice_id"] for i, r in enumerate(ir.get("rules", []))}
    active: dict[int, set[Place]] = {}
    for index, place in places.items():
        if index in now.rules:
            d = lane_delta(now.rules[index], before.rules.get(index), bits)
            out.setdefault(place, LaneDelta()).add(d)
            if d.packets:
                active.setdefault(slice_of_rule[index], set()).add(place)
    # drops and ECN marks counted per slice (not per rule): theirs when one lane carried the slice
    for sid, c in now.slices.items():
        d = lane_delta(c, before.slices.get(sid), bits)
        lanes = active.get(sid, set())
        if (d.drops or d.ecn_marks) and len(lanes) == 1:
            target = out[next(iter(lanes))]
            if not target.drops and not target.ecn_marks:  # the rules did not count them already
                target.drops, target.ecn_marks = d.drops, d.ecn_marks
    return out


def point_of(place: Place, backend_id: int, d: LaneDelta, ts: datetime, interval_s: float) -> KpiPoint | None:
    """The sample of one place's interval; None when nothing entered, left or was dropped."""
    dropped = sum(d.drops.values())
    if not d.packets and not d.tx_packets and not dropped:
        return None
    delivered = d.tx_packets if d.tx_packets is not None else max(d.packets - dropped, 0)
    out_bytes = d.tx_bytes if d.tx_bytes is not None else d.bytes
    stats = delay_stats(d.delay) if d.delay_measured else None
    return KpiPoint(
        slice_id=place[0],
        backend_id=backend_id,
        lane=place[1],
        source="counters",
        ts=ts,
        interval_s=interval_s,
        tx_packets=d.packets,
        rx_packets=delivered,
        tx_bytes=d.bytes,
        rx_bytes=out_bytes,
        throughput_bps=out_bytes * 8 / interval_s,
        loss_pct=100.0 * min(dropped, d.packets) / d.packets if d.packets else 0.0,
        delay_mean_ms=stats.mean_ms if stats else None,
        delay_p50_ms=stats.p50_ms if stats else None,
        delay_p99_ms=stats.p99_ms if stats else None,
        drops=d.drops,
        ecn_marks=d.ecn_marks,
    )


@dataclass
class _Baseline:
    counters: Counters
    rule_set_id: int
    read_at: float  # the counters' own timestamp (Counters.timestamp)


class KpiCollector(PeriodicDuty):
    """The collector duty (leader only): ``start`` / ``stop`` like the reconciler."""

    loop_name = "kpi-collector"

    def __init__(
        self,
        sessions: sessionmaker[Session],
        read_counters: ReadCounters,
        interval_s: float = 1.0,
        *,
        registry: LoopRegistry | None = None,
    ) -> None:
        super().__init__(interval_s, registry)
        self._sessions = sessions
        self._read = read_counters
        self._baselines: dict[int, _Baseline] = {}
        self._in_flight: dict[int, Future[Counters | None]] = {}
        self._pool = ThreadPoolExecutor(max_workers=8, thread_name_prefix="kpi-read")
        self._lock = threading.Lock()

    def stop(self) -> None:
        super().stop()
        self._pool.shutdown(wait=False, cancel_futures=True)

    def _read_one(self, backend: Backend) -> Counters | None:
        with self._sessions() as session:
            return self._read(session, backend)

    def read_all(self, backends: list[Backend]) -> dict[int, tuple[Counters, float]]:
        """backend id -> its counters and when they were taken, for those that answered within the interval."""
        deadline = time.monotonic() + self._period_s * 0.8
        started: dict[int, Future[Counters | None]] = {}
        for b in backends:
            if b.id in self._in_flight and not self._in_flight[b.id].done():
                continue  # still hanging from an earlier interval: no second read piles up
            started[b.id] = self._in_flight[b.id] = self._pool.submit(self._read_one, b)
        got: dict[int, tuple[Counters, float]] = {}
        for backend_id, fut in started.items():
            try:
                c = fut.result(timeout=max(deadline - time.monotonic(), 0.0))
            except FutureTimeout:
                continue
            except DriverError as exc:
                log.debug("backend %d: no counters: %s", backend_id, exc.message)
                continue
            except Exception:
                log.exception("backend %d: reading counters failed", backend_id)
                continue
            self._in_flight.pop(backend_id, None)
            if c is not None:
                # the data plane's own time of the counters: a slow read (a loaded host, a card
                # answering between bursts) must not stretch or shrink the interval's rates
                got[backend_id] = (c, c.timestamp)
        return got

    def collect(self, session: Session, backends: list[Backend]) -> list[KpiPoint]:
        """Read every backend once; the points of the intervals since each one's previous read."""
        readings = self.read_all(backends)
        now_dt = datetime.now(UTC)
        points: list[KpiPoint] = []
        for backend in backends:
            if backend.id not in readings:
                continue
            counters, read_at = readings[backend.id]
            rule_set = current_rule_set(session, backend.id)
            if rule_set is None:
                self._baselines.pop(backend.id, None)
                continue
            before = self._baselines.get(backend.id)
            self._baselines[backend.id] = _Baseline(counters, rule_set.id, read_at)
            if before is None or before.rule_set_id != rule_set.id:
                continue  # a first read, or other rules (other counters): the new baseline
            interval_s = read_at - before.read_at
            if interval_s <= 0:
                continue
            try:
                deltas = interval_deltas(
                    counters,
                    before.counters,
                    rule_set.ir,
                    rule_set.explanation,
                    COUNTER_BITS.get(backend.driver, DEFAULT_BITS),
                )
            except CounterReset as exc:
                log.info("backend %s: counters restarted (%s); no sample this interval", backend.name, exc)
                continue
            for place, d in deltas.items():
                p = point_of(place, backend.id, d, now_dt, interval_s)
                if p is not None:
                    points.append(p)
        return points

    def run_once(self) -> list[KpiPoint]:
        with self._lock, self._sessions() as session:
            # a backend the probes found dead is not read: its read would hold the driver through
            # the connect timeout, and it shows "no data" either way
            backends = [b for b in session.scalars(select(Backend).order_by(Backend.id)) if b.health not in HEALTH_DOWN]
            session.expunge_all()  # the reads run in threads with sessions of their own
            points = self.collect(session, backends)
            if points:
                ingest(session, points)  # one round trip for the interval's samples
            return points
