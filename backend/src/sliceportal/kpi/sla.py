"""SLA evaluation with hold-down, over the stored samples of each (slice, backend).

A check is *bad* in an interval when its KPI is beyond the slice's SLA:

- per lane: loss %, p99 delay, jitter above ``max_loss_pct`` / ``max_delay_ms`` / ``max_jitter_ms``;
- per slice (lanes summed): the guaranteed rate — offered load above ``guaranteed_mbps`` while
  the delivered throughput is below it (a slice sending less than its guarantee is not short).

A violation opens when a check has been bad for ``open_after`` consecutive intervals and
closes after ``close_after`` consecutive intervals that are not bad, so one noisy interval
is not an event and a flapping KPI is one violation, not hundreds. ``started_at`` is the
start of the first bad interval, ``ended_at`` the end of the last bad one: an interval is
inside the violation when its sample's ``ts`` lies in (started_at, ended_at].

Several sources may report the same slice and lane (``KpiSample.source``: the testbed's
meter, the data plane's counters, active probes), each with its own interval boundaries.
Judging their samples together would count one event twice, or let one source's good
interval break another's run of bad ones. So each check is judged from ONE source per
(slice, backend): the first of its ``Check.sources`` that has a value in the window read.
End-to-end measurements come first (the testbed's meter sees every packet end to end);
then, for loss and the guaranteed rate, the data plane's counters (every packet, inside
the plane) before probes (a few packets a second); for delay and jitter, probes (end to
end) before counters (queueing inside the plane only). Probes never judge the guaranteed
rate: their throughput is their own probing rate.

The evaluation reads the windows from ``kpi_sample`` (the samples are the facts; nothing
else is kept between intervals), so any worker evaluates the same way, and re-storing an
interval does not open a second violation. Each violation keeps its evidence: the samples
that opened and closed it, the rule set in force on that backend when it opened, and the
data plane's counters (drops by reason, ECN marks, packets) over the opening samples.
"""

from __future__ import annotations

import json
from collections import defaultdict, deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import Any

from sqlalchemy import Text, cast, func, select, tuple_
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings, get_settings
from sliceportal.kpi.points import KpiPoint
from sliceportal.models import KpiSample, SlaViolation, Slice
from sliceportal.models.queries import current_rule_set

RATE_METRIC = "throughput_mbps"  # the guaranteed-rate check: delivered throughput, Mbit/s


@dataclass(frozen=True)
class HoldDown:
    open_after: int = 3  # consecutive bad intervals that open a violation
    close_after: int = 5  # consecutive good intervals that close it

    @classmethod
    def from_settings(cls, settings: Settings) -> HoldDown:
        return cls(settings.sla_open_after, settings.sla_close_after)

    def as_dict(self) -> dict[str, int]:
        return {"open_after": self.open_after, "close_after": self.close_after}


@dataclass(frozen=True)
class Check:
    metric: str  # the KpiPoint field compared (or RATE_METRIC)
    sla: str  # the Slice SLA field it is compared with
    sources: tuple[str, ...]  # which source judges it, first present first (module docstring)
    below: bool = False  # True: bad when below the limit (a floor), else when above (a ceiling)


LANE_CHECKS = (
    Check("loss_pct", "max_loss_pct", ("testbed", "counters", "probe")),
    Check("delay_p99_ms", "max_delay_ms", ("testbed", "probe", "counters")),
    Check("jitter_ms", "max_jitter_ms", ("testbed", "probe", "counters")),
)
RATE_CHECK = Check(RATE_METRIC, "guaranteed_mbps", ("testbed", "counters"), below=True)


Sample = Any  # a ``kpi_sample`` row as ``_windows`` reads it: its columns as attributes


def judging_source(check: Check, intervals: Sequence[tuple[datetime, dict[str, list[Sample]]]]) -> str | None:
    """The source whose samples judge ``check`` in this window: the first of its preference
    with a value (any sample, for the rate) in the window."""
    present = {src for _, by_source in intervals for src, rows in by_source.items()
               if check is RATE_CHECK or any(getattr(r, check.metric) is not None for r in rows)}
    return next((src for src in check.sources if src in present), None)


@dataclass(slots=True)  # not frozen: a frozen dataclass's __init__ costs a setattr call per field
class Reading:
    """One check's value in one interval: ``bad`` is None when there is nothing to judge."""

    ts: datetime
    interval_s: float
    value: float | None
    bad: bool
    offered_mbps: float | None = None
    samples: tuple[Sample, ...] = ()  # every lane's sample of the interval (for counters)

    def evidence(self, lane: int | None) -> dict[str, Any]:
        out: dict[str, Any] = {"ts": self.ts.isoformat(), "lane": lane, "value": self.value}
        if self.offered_mbps is not None:
            out["offered_mbps"] = self.offered_mbps
        return out


def offered_mbps(s: Sample) -> float:
    """Offered load of one sample: the bytes sent, else the packets sent at the received mean size."""
    sent = s.tx_bytes or (s.tx_packets * s.rx_bytes / s.rx_packets if s.rx_packets else 0)
    return float(sent * 8 / s.interval_s / 1e6)


def _rate_reading(lanes: tuple[Sample, ...], ts: datetime, interval_s: float, guaranteed: float) -> Reading:
    delivered = sum(s.throughput_bps for s in lanes) / 1e6
    offered = sum(offered_mbps(s) for s in lanes)
    return Reading(ts, interval_s, delivered, offered > guaranteed and delivered < guaranteed,
                   offered_mbps=offered, samples=lanes)


def _counters(readings: Sequence[Reading], lane: int | None) -> dict[str, Any]:
    """The data plane's counters summed over the readings' samples (one lane, or all)."""
    drops: dict[str, int] = defaultdict(int)
    totals = {"tx_packets": 0, "rx_packets": 0, "ecn_marks": 0}
    for r in readings:
        for s in r.samples:
            if lane is not None and s.lane != lane:
                continue
            totals["tx_packets"] += s.tx_packets
            totals["rx_packets"] += s.rx_packets
            totals["ecn_marks"] += s.ecn_marks
            for reason, n in (json.loads(s.drops) if s.drops else {}).items():
                drops[reason] += n
    return {**totals, "drops": dict(drops)}


class _Track:
    """The hold-down state of one check on one lane (or the slice) as its readings arrive in
    time order: the run of bad readings (the last ``open_after``), the run of good ones (the
    last ``close_after``) and the last bad reading. That is all a verdict looks at, so each
    reading costs O(1), however long the window."""

    __slots__ = ("bad_run", "good_run", "last_bad")

    def __init__(self, hold: HoldDown) -> None:
        self.bad_run: deque[Reading] = deque(maxlen=hold.open_after)
        self.good_run: deque[Reading] = deque(maxlen=hold.close_after)
        self.last_bad: Reading | None = None

    def push(self, r: Reading) -> None:
        if r.bad:
            self.bad_run.append(r)
            self.good_run.clear()
            self.last_bad = r
        else:
            self.good_run.append(r)
            self.bad_run.clear()


class _Evaluator:
    def __init__(self, session: Session, hold: HoldDown) -> None:
        self.session = session
        self.hold = hold
        self.changed: list[SlaViolation] = []
        self._rule_sets: dict[int, dict[str, Any] | None] = {}

    def rule_set(self, backend_id: int) -> dict[str, Any] | None:
        if backend_id not in self._rule_sets:
            rs = current_rule_set(self.session, backend_id)
            self._rule_sets[backend_id] = (None if rs is None else
                                           {"id": rs.id, "number": rs.number, "digest": rs.digest})
        return self._rule_sets[backend_id]

    def step(self, s: Slice, backend_id: int, lane: int | None, check: Check, limit: float,
             track: _Track, newest: Reading, current: SlaViolation | None,
             events: list[tuple[bool, SlaViolation]]) -> SlaViolation | None:
        """Judge ``newest``, the reading ``track`` took last; returns the open violation and
        appends what changed to ``events`` (True: opened)."""
        if current is None:
            if len(track.bad_run) < self.hold.open_after:
                return None  # fewer than open_after bad readings in a row
            window = list(track.bad_run)
            values = [r.value for r in window if r.value is not None]
            current = SlaViolation(
                slice_id=s.id, backend_id=backend_id, lane=lane, metric=check.metric, threshold=limit,
                worst=min(values) if check.below else max(values),
                started_at=window[0].ts - timedelta(seconds=window[0].interval_s),
                detail={"direction": "below" if check.below else "above", "sla_field": check.sla},
                evidence={"opened_by": [r.evidence(lane) for r in window], "closed_by": [],
                          "hold_down": self.hold.as_dict(), "rule_set": self.rule_set(backend_id),
                          "counters": _counters(window, lane)})
            events.append((True, current))
            return current
        if newest.bad and newest.value is not None:
            current.worst = min(current.worst, newest.value) if check.below else max(current.worst, newest.value)
            return current
        if len(track.good_run) < self.hold.close_after:
            return current  # fewer than close_after good readings in a row
        window = list(track.good_run)
        last_bad = track.last_bad  # the window is all good: the last bad one lies before it
        current.ended_at = last_bad.ts if last_bad is not None and last_bad.ts > current.started_at else (
            window[0].ts - timedelta(seconds=window[0].interval_s))
        current.evidence = {**current.evidence, "closed_by": [r.evidence(lane) for r in window]}
        events.append((False, current))
        return None


def _windows(session: Session, keys: set[tuple[int, int]], since: datetime, until: datetime
             ) -> dict[tuple[int, int], dict[datetime, dict[str, list[Sample]]]]:
    """Stored samples of each (slice, backend) in (since, until], grouped by interval and
    source (rows, not ORM objects: a window is read on every ingest)."""
    out: dict[tuple[int, int], dict[datetime, dict[str, list[Sample]]]] = defaultdict(
        lambda: defaultdict(lambda: defaultdict(list)))
    t = KpiSample.__table__
    # drops as text: parsed only for a violation's evidence (``_counters``), not for every row read
    columns = [cast(c, Text).label("drops") if c.name == "drops" else c for c in t.c]
    rows = session.execute(select(*columns).where(
        tuple_(t.c.slice_id, t.c.backend_id).in_(list(keys)),
        t.c.ts > since, t.c.ts <= until).order_by(t.c.ts, t.c.lane))
    for r in rows:
        out[(r.slice_id, r.backend_id)][r.ts][r.source].append(r)
    return out


def evaluate(session: Session, points: Iterable[KpiPoint], hold: HoldDown | None = None) -> list[SlaViolation]:
    """Judge the intervals of ``points`` (already stored) in time order; returns the violations
    opened or closed."""
    points = list(points)
    if not points:
        return []
    hold = hold or HoldDown.from_settings(get_settings())
    keys = {(p.slice_id, p.backend_id) for p in points}
    new_ts: dict[tuple[int, int], set[datetime]] = defaultdict(set)
    for p in points:
        new_ts[(p.slice_id, p.backend_id)].add(p.ts)
    slices = {s.id: s for s in session.scalars(select(Slice).where(Slice.id.in_({k[0] for k in keys})))}
    # a slice without an SLA has nothing to judge: its windows are not read
    keys = {k for k in keys if k[0] in slices and any(
        getattr(slices[k[0]], check.sla) is not None for check in (*LANE_CHECKS, RATE_CHECK))}
    if not keys:
        return []
    span = max(hold.open_after, hold.close_after) + 1
    widest = max(p.interval_s for p in points)
    earliest = min(new for ts in new_ts.values() for new in ts)
    windows = _windows(session, keys, earliest - timedelta(seconds=span * widest * 2),
                       max(p.ts for p in points))
    open_rows: dict[tuple[int, int, int | None, str], SlaViolation] = {
        (v.slice_id, v.backend_id, v.lane, v.metric): v for v in session.scalars(
            select(SlaViolation).where(tuple_(SlaViolation.slice_id, SlaViolation.backend_id).in_(list(keys)),
                                       SlaViolation.ended_at.is_(None)))}
    # intervals already judged inside a closed violation (from its start to the interval that
    # closed it) are not judged again when stored again
    judged: dict[tuple[int, int, int | None, str], list[tuple[datetime, datetime]]] = defaultdict(list)
    for v in session.scalars(select(SlaViolation).where(
            tuple_(SlaViolation.slice_id, SlaViolation.backend_id).in_(list(keys)),
            SlaViolation.ended_at >= earliest - timedelta(seconds=span * widest * 2))):
        closed_by = (v.evidence or {}).get("closed_by") or []
        until = datetime.fromisoformat(closed_by[-1]["ts"]) if closed_by else v.ended_at
        assert until is not None
        judged[(v.slice_id, v.backend_id, v.lane, v.metric)].append((v.started_at, until))
    ev = _Evaluator(session, hold)
    for key in sorted(keys):
        s = slices.get(key[0])
        if s is None:
            continue
        intervals = sorted(windows.get(key, {}).items())
        lanes_seen = sorted({x.lane for _, by_source in intervals for rows in by_source.values() for x in rows})
        fresh = new_ts[key]
        # what changed, per (check, lane) in time order: added to the session and reported in
        # the order a check-by-check, lane-by-lane pass gives (ids follow it)
        events: dict[tuple[int, int], list[tuple[bool, SlaViolation]]] = defaultdict(list)

        def judge(lane: int | None, check: Check, limit: float, track: _Track, reading: Reading, ts: datetime,
                  order: tuple[int, int], key: tuple[int, int] = key, s: Slice = s, fresh: set[datetime] = fresh,
                  events: dict[tuple[int, int], list[tuple[bool, SlaViolation]]] = events) -> None:
            if ts not in fresh:
                return  # judged when it arrived
            okey = (key[0], key[1], lane, check.metric)
            current = open_rows.get(okey)
            if current is not None and ts <= current.started_at:
                return  # an interval from before the open violation: already judged
            if current is None and any(lo < ts <= hi for lo, hi in judged.get(okey, ())):
                return
            after = ev.step(s, key[1], lane, check, limit, track, reading, current, events[order])
            if after is None:
                open_rows.pop(okey, None)
            else:
                open_rows[okey] = after

        for c, check in enumerate(LANE_CHECKS):
            limit = getattr(s, check.sla)
            if limit is None or not lanes_seen:
                continue
            source = judging_source(check, intervals)
            tracks = {lane: _Track(hold) for lane in lanes_seen}
            # a lane whose reading can change something: one with a violation open or a run of
            # bad readings; any other lane without a sample in an interval reads "not bad" there,
            # which changes nothing, so it is skipped (the cost is per sample, not per lane)
            busy = {lane for lane in lanes_seen if (key[0], key[1], lane, check.metric) in open_rows}
            for ts, by_source in intervals:
                rows = by_source.get(source) if source is not None else None
                if not rows:
                    continue  # another source's interval: not this check's to judge
                interval_s = rows[0].interval_s
                every = tuple(rows)
                here: dict[int, Sample] = {}
                for r in rows:
                    here.setdefault(r.lane, r)
                for lane in sorted(here.keys() | busy):
                    sample = here.get(lane)
                    value = getattr(sample, check.metric) if sample is not None else None
                    reading = Reading(ts, interval_s, value, value is not None and value > limit, samples=every)
                    track = tracks[lane]
                    track.push(reading)
                    if ts in fresh:
                        judge(lane, check, limit, track, reading, ts, (c, lane))
                    if track.bad_run or (key[0], key[1], lane, check.metric) in open_rows:
                        busy.add(lane)
                    else:
                        busy.discard(lane)
        if s.guaranteed_mbps is not None:
            source = judging_source(RATE_CHECK, intervals)
            track = _Track(hold)
            for ts, by_source in intervals:
                rows = by_source.get(source) if source is not None else None
                if not rows:
                    continue
                reading = _rate_reading(tuple(rows), ts, rows[0].interval_s, s.guaranteed_mbps)
                track.push(reading)
                if ts in fresh:
                    judge(None, RATE_CHECK, s.guaranteed_mbps, track, reading, ts, (len(LANE_CHECKS), 0))
        for order in sorted(events):
            for opened, v in events[order]:
                if opened:
                    ev.session.add(v)
                ev.changed.append(v)
    session.flush()
    return ev.changed


def within_sla(session: Session, slice_id: int, since: datetime, until: datetime) -> list[tuple[int, int, int]]:
    """Per backend: intervals with a sample in (since, until], and how many of them lay inside
    a violation of that backend."""
    v = SlaViolation
    inside = (select(v.id).where(v.slice_id == KpiSample.slice_id, v.backend_id == KpiSample.backend_id,
                                 v.started_at < KpiSample.ts, (v.ended_at.is_(None)) | (KpiSample.ts <= v.ended_at))
              .exists())
    rows = session.execute(
        select(KpiSample.backend_id, func.count(func.distinct(KpiSample.ts)),
               func.count(func.distinct(KpiSample.ts)).filter(inside))
        .where(KpiSample.slice_id == slice_id, KpiSample.ts > since, KpiSample.ts <= until)
        .group_by(KpiSample.backend_id).order_by(KpiSample.backend_id))
    return [(b, total, bad) for b, total, bad in rows]
