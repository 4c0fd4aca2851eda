"""SLA evaluation with hold-down, one interval at a time from a state kept per check.

A check is *bad* in an interval when its KPI is beyond the slice's SLA:

- per lane: loss %, p99 delay, jitter above ``max_loss_pct`` / ``max_delay_ms`` / ``max_jitter_ms``;
- per slice (lanes summed): the guaranteed rate — offered load above ``guaranteed_mbps`` while
  the delivered throughput is below it (a slice sending less than its guarantee is not short).

A violation opens when a check has been bad for ``open_after`` consecutive intervals and
closes after ``close_after`` consecutive intervals that are not bad, so one noisy interval
is not an event. ``started_at`` is the start of the first bad interval, ``ended_at`` the end
of the last bad one: an interval is inside the violation when its sample's ``ts`` lies in
(started_at, ended_at]. A violation that would open again within ``merge_within_s`` of the
end of the check's last one re-opens that one instead (issue #29): a flapping KPI is one
episode, its evidence lists the gaps merged (``flaps``).

Several sources may report the same slice and lane (``KpiSample.source``: the testbed's
meter, the data plane's counters, active probes), each with its own interval boundaries.
Judging their samples together would count one event twice, or let one source's good
interval break another's run of bad ones. So each check is judged from ONE source per
(slice, backend): the first of its ``Check.sources`` that had a value within the hold-down's
window (``2 x (max(open_after, close_after) + 1)`` of its intervals) of the interval judged.
End-to-end measurements come first (the testbed's meter sees every packet end to end);
then, for loss and the guaranteed rate, the data plane's counters (every packet, inside
the plane) before probes (a few packets a second); for delay and jitter, probes (end to
end) before counters (queueing inside the plane only). Probes never judge the guaranteed
rate: their throughput is their own probing rate.

The state between intervals lives in ``sla_check_state`` (migration 0021), written in the
transaction that stores the samples: per (slice, backend) a head row (metric '', lane -1)
with, per check and source, the last interval judged and the last with a value; per (slice,
backend, check, lane) a row only while something is pending — a run of bad readings (the
last ``open_after``), an open violation with its run of good ones (the last
``close_after``) and its last bad reading, or a closed violation still within
``merge_within_s``. A lane whose readings are all good has no row, so the cost of an
interval is its samples plus the few pending checks, never the window. Every ingest locks
its head rows first (``SELECT … FOR UPDATE``), so several API workers storing intervals of
the same (slice, backend) judge them one after the other, alike; an interval arriving again
(a restarted source) or later than one already judged of its source is not judged again.
Each violation keeps its evidence: the readings that opened and closed it, the rule set in
force on that backend when it opened, and the data plane's counters (drops by reason, ECN
marks, packets) over the opening samples.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any, Protocol

from sqlalchemy import func, select, text
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings, get_settings
from sliceportal.kpi.points import KpiPoint
from sliceportal.models import KpiSample, SlaViolation, Slice
from sliceportal.models.queries import current_rule_set

RATE_METRIC = "throughput_mbps"  # the guaranteed-rate check: delivered throughput, Mbit/s
STATE_TABLE = "sla_check_state"
HEAD = ("", -1)  # (metric, lane) of a (slice, backend)'s head row
SLICE_WIDE = -1  # the lane of the slice-wide rate check's row


@dataclass(frozen=True)
class HoldDown:
    open_after: int = 3  # consecutive bad intervals that open a violation
    close_after: int = 5  # consecutive good intervals that close it
    merge_within_s: float = 0.0  # a re-opening this close to the last end continues that violation

    @classmethod
    def from_settings(cls, settings: Settings) -> HoldDown:
        return cls(settings.sla_open_after, settings.sla_close_after, settings.sla_merge_within_s)

    def as_dict(self) -> dict[str, float]:
        return {"open_after": self.open_after, "close_after": self.close_after, "merge_within_s": self.merge_within_s}

    def window(self, interval_s: float) -> timedelta:
        """How far from an interval another source's value still makes that source present."""
        return timedelta(seconds=2 * (max(self.open_after, self.close_after) + 1) * interval_s)


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
CHECKS = (*LANE_CHECKS, RATE_CHECK)

Reading = dict[str, Any]  # {"ts": iso, "i": interval_s, "v": value, "o": offered Mbit/s, "c": counters}


def offered_mbps(s: KpiPoint) -> float:
    """Offered load of one sample: the bytes sent, else the packets sent at the received mean size."""
    sent = s.tx_bytes or (s.tx_packets * s.rx_bytes / s.rx_packets if s.rx_packets else 0)
    return float(sent * 8 / s.interval_s / 1e6)


class CountedSample(Protocol):
    """What ``counter_totals`` reads of a sample (a ``KpiPoint``, a stored ``KpiSample``)."""

    tx_packets: int
    rx_packets: int
    ecn_marks: int
    drops: dict[str, int]


def counter_totals(samples: Iterable[CountedSample]) -> dict[str, Any]:
    """The data plane's counters summed over ``samples``."""
    drops: dict[str, int] = defaultdict(int)
    totals = {"tx_packets": 0, "rx_packets": 0, "ecn_marks": 0}
    for s in samples:
        totals["tx_packets"] += s.tx_packets
        totals["rx_packets"] += s.rx_packets
        totals["ecn_marks"] += s.ecn_marks
        for reason, n in s.drops.items():
            drops[reason] += n
    return {**totals, "drops": dict(drops)}


def _sum_counters(readings: Sequence[Reading]) -> dict[str, Any]:
    drops: dict[str, int] = defaultdict(int)
    totals = {"tx_packets": 0, "rx_packets": 0, "ecn_marks": 0}
    for r in readings:
        c = r.get("c") or {}
        for k in totals:
            totals[k] += c.get(k, 0)
        for reason, n in (c.get("drops") or {}).items():
            drops[reason] += n
    return {**totals, "drops": dict(drops)}


def _start(r: Reading) -> datetime:
    return datetime.fromisoformat(r["ts"]) - timedelta(seconds=r["i"])


def _evidence(r: Reading, lane: int | None) -> dict[str, Any]:
    out: dict[str, Any] = {"ts": r["ts"], "lane": lane, "value": r["v"]}
    if "o" in r:
        out["offered_mbps"] = r["o"]
    return out


@dataclass(slots=True)
class _LaneState:
    """What one check on one lane (or the slice) carries between intervals (module docstring)."""

    src: str | None = None
    bad: list[Reading] = field(default_factory=list)
    good: list[Reading] = field(default_factory=list)  # kept only while a violation is open
    last_bad: str | None = None  # iso ts of the last bad reading
    open_id: int | None = None
    closed_id: int | None = None
    closed_end: str | None = None  # iso ended_at of the last violation closed
    last_ts: datetime | None = None  # the newest reading pushed (not stored: for the merge expiry)
    stored: bool = False  # a row exists for it

    @classmethod
    def load(cls, state: dict[str, Any]) -> _LaneState:
        return cls(
            src=state.get("src"),
            bad=state.get("bad", []),
            good=state.get("good", []),
            last_bad=state.get("last_bad"),
            open_id=state.get("open"),
            closed_id=state.get("closed"),
            closed_end=state.get("closed_end"),
            stored=True,
        )

    def dump(self) -> dict[str, Any]:
        return {
            "src": self.src,
            "bad": self.bad,
            "good": self.good,
            "last_bad": self.last_bad,
            "open": self.open_id,
            "closed": self.closed_id,
            "closed_end": self.closed_end,
        }

    def busy(self) -> bool:
        """A missing sample (read "not bad") changes something only while this holds."""
        return bool(self.bad) or self.open_id is not None

    def empty(self, hold: HoldDown) -> bool:
        if self.busy():
            return False
        if self.closed_end is None or self.last_ts is None:
            return True
        return (self.last_ts - datetime.fromisoformat(self.closed_end)).total_seconds() > hold.merge_within_s


class _Evaluator:
    def __init__(self, session: Session, hold: HoldDown) -> None:
        self.session = session
        self.hold = hold
        self._rule_sets: dict[int, dict[str, Any] | None] = {}
        self.violations: dict[int, SlaViolation] = {}  # by id: those the states refer to
        self.new: dict[int, SlaViolation] = {}  # by id(): opened in this batch, no id before the flush

    def rule_set(self, backend_id: int) -> dict[str, Any] | None:
        if backend_id not in self._rule_sets:
            rs = current_rule_set(self.session, backend_id)
            self._rule_sets[backend_id] = (
                None if rs is None else {"id": rs.id, "number": rs.number, "digest": rs.digest}
            )
        return self._rule_sets[backend_id]

    def violation(self, ref: int) -> SlaViolation:
        """A state's violation: a stored one by id, or one opened in this batch (negative: its id())."""
        return self.new[-ref] if ref < 0 else self.violations[ref]

    def step(
        self,
        slice_id: int,
        backend_id: int,
        lane: int,
        check: Check,
        limit: float,
        st: _LaneState,
        r: Reading,
        events: list[tuple[bool, SlaViolation]],
    ) -> None:
        """Push the newest reading ``r`` into ``st`` and open / extend / close its violation,
        appending what changed to ``events`` (True: opened or re-opened)."""
        hold, bad = self.hold, r["bad"]
        del r["bad"]
        st.last_ts = datetime.fromisoformat(r["ts"])
        if bad:
            st.bad = [*st.bad[-(hold.open_after - 1) :], r] if hold.open_after > 1 else [r]
            st.good = []
            st.last_bad = r["ts"]
        else:
            st.bad = []
            if st.open_id is not None:
                st.good = [*st.good[-(hold.close_after - 1) :], r] if hold.close_after > 1 else [r]
        v_lane = None if check is RATE_CHECK else lane
        if st.open_id is None:
            if len(st.bad) < hold.open_after:
                return  # fewer than open_after bad readings in a row
            window = st.bad
            values = [w["v"] for w in window if w["v"] is not None]
            worst = min(values) if check.below else max(values)
            started = _start(window[0])
            if (
                st.closed_id is not None
                and st.closed_end is not None
                and hold.merge_within_s > 0
                and (started - datetime.fromisoformat(st.closed_end)).total_seconds() <= hold.merge_within_s
            ):
                # a flap: the last violation of this check goes on (one episode, issue #29)
                v = self.violation(st.closed_id)
                gap = {
                    "ended_at": v.ended_at.isoformat() if v.ended_at else None,
                    "reopened_at": started.isoformat(),
                    "reopened_by": [_evidence(w, v_lane) for w in window],
                }
                v.ended_at = None
                v.worst = min(v.worst, worst) if check.below else max(v.worst, worst)
                v.evidence = {**v.evidence, "closed_by": [], "flaps": [*v.evidence.get("flaps", []), gap]}
                st.open_id = st.closed_id
            else:
                v = SlaViolation(
                    slice_id=slice_id,
                    backend_id=backend_id,
                    lane=v_lane,
                    metric=check.metric,
                    threshold=limit,
                    worst=worst,
                    started_at=started,
                    detail={"direction": "below" if check.below else "above", "sla_field": check.sla},
                    evidence={
                        "source": st.src,  # whose samples judged it (module docstring)
                        "opened_by": [_evidence(w, v_lane) for w in window],
                        "closed_by": [],
                        "hold_down": hold.as_dict(),
                        "rule_set": self.rule_set(backend_id),
                        "counters": _sum_counters(window),
                    },
                )
                self.new[id(v)] = v
                st.open_id = -id(v)
            st.closed_id = st.closed_end = None
            st.good = []
            events.append((True, v))
            return
        v = self.violation(st.open_id)
        if bad:
            if r["v"] is not None:
                v.worst = min(v.worst, r["v"]) if check.below else max(v.worst, r["v"])
            return
        if len(st.good) < hold.close_after:
            return  # fewer than close_after good readings in a row
        window = st.good
        last_bad = datetime.fromisoformat(st.last_bad) if st.last_bad is not None else None
        v.ended_at = last_bad if last_bad is not None and last_bad > v.started_at else _start(window[0])
        v.evidence = {**v.evidence, "closed_by": [_evidence(w, v_lane) for w in window]}
        events.append((False, v))
        st.closed_id, st.closed_end = st.open_id, v.ended_at.isoformat()
        st.open_id = None
        st.good = []


def _lock_heads(session: Session, keys: list[tuple[int, int]]) -> dict[tuple[int, int, str, int], dict[str, Any]]:
    """Create the head rows that are missing, lock every state row of ``keys`` (heads first, in
    key order, so two workers never wait on each other crosswise) and return their states."""
    slices, backends = [k[0] for k in keys], [k[1] for k in keys]
    session.execute(
        text(
            f"INSERT INTO {STATE_TABLE} (slice_id, backend_id, metric, lane) "
            "SELECT s, b, '', -1 FROM unnest(CAST(:s AS bigint[]), CAST(:b AS bigint[])) AS k(s, b) ORDER BY s, b "
            "ON CONFLICT DO NOTHING"
        ),
        {"s": slices, "b": backends},
    )
    session.execute(
        text(
            f"SELECT 1 FROM {STATE_TABLE} WHERE metric = '' AND lane = -1 AND (slice_id, backend_id) IN "
            "(SELECT * FROM unnest(CAST(:s AS bigint[]), CAST(:b AS bigint[]))) "
            "ORDER BY slice_id, backend_id FOR UPDATE"
        ),
        {"s": slices, "b": backends},
    )
    rows = session.execute(
        text(
            f"SELECT slice_id, backend_id, metric, lane, state FROM {STATE_TABLE} WHERE (slice_id, backend_id) IN "
            "(SELECT * FROM unnest(CAST(:s AS bigint[]), CAST(:b AS bigint[])))"
        ),
        {"s": slices, "b": backends},
    )
    return {(r.slice_id, r.backend_id, r.metric, r.lane): r.state for r in rows}


def _write(session: Session, upserts: list[dict[str, Any]], deletes: list[tuple[int, int, str, int]]) -> None:
    if upserts:
        session.execute(
            text(
                f"INSERT INTO {STATE_TABLE} (slice_id, backend_id, metric, lane, state) "
                f"SELECT slice_id, backend_id, metric, lane, state FROM json_populate_recordset(NULL::{STATE_TABLE}, "
                "CAST(:rows AS json)) ON CONFLICT (slice_id, backend_id, metric, lane) "
                "DO UPDATE SET state = EXCLUDED.state"
            ),
            {"rows": json.dumps(upserts)},
        )
    if deletes:
        session.execute(
            text(
                f"DELETE FROM {STATE_TABLE} WHERE (slice_id, backend_id, metric, lane) IN (SELECT * FROM "
                "unnest(CAST(:s AS bigint[]), CAST(:b AS bigint[]), CAST(:m AS text[]), CAST(:l AS int[])))"
            ),
            {
                "s": [d[0] for d in deletes],
                "b": [d[1] for d in deletes],
                "m": [d[2] for d in deletes],
                "l": [d[3] for d in deletes],
            },
        )


def _present(seen: tuple[datetime, datetime | None, float] | None, ts: datetime, hold: HoldDown) -> bool:
    """Whether a source (its last interval judged, last with a value, interval) has a value near ``ts``."""
    return seen is not None and seen[1] is not None and abs(ts - seen[1]) <= hold.window(seen[2])


def evaluate(session: Session, points: Iterable[KpiPoint], hold: HoldDown | None = None) -> list[SlaViolation]:
    """Judge the intervals of ``points`` (stored in this transaction) in time order, from and
    into ``sla_check_state``; returns the violations opened, re-opened or closed."""
    points = list(points)
    if not points:
        return []
    hold = hold or HoldDown.from_settings(get_settings())
    slice_ids = {p.slice_id for p in points}
    slices = {s.id: s for s in session.scalars(select(Slice).where(Slice.id.in_(slice_ids)))}
    limits = {
        sid: [(c, getattr(s, c.sla)) for c in CHECKS if getattr(s, c.sla) is not None] for sid, s in slices.items()
    }
    # per (slice, backend): the intervals, each source's samples of one ts, in time order
    grouped: dict[tuple[int, int], dict[tuple[datetime, str], list[KpiPoint]]] = defaultdict(lambda: defaultdict(list))
    for p in points:
        if limits.get(p.slice_id):  # a slice without an SLA has nothing to judge
            grouped[(p.slice_id, p.backend_id)][(p.ts, p.source)].append(p)
    if not grouped:
        return []
    keys = sorted(grouped)
    states = _lock_heads(session, keys)
    ev = _Evaluator(session, hold)
    refs = {ref for state in states.values() for ref in (state.get("open"), state.get("closed")) if ref}
    if refs:
        ev.violations = {v.id: v for v in session.scalars(select(SlaViolation).where(SlaViolation.id.in_(refs)))}
    changed: list[SlaViolation] = []
    lane_states: dict[tuple[int, int, str, int], _LaneState] = {
        k: _LaneState.load(state) for k, state in states.items() if k[2:] != HEAD
    }
    by_key: dict[tuple[int, int], dict[str, dict[int, _LaneState]]] = defaultdict(lambda: defaultdict(dict))
    for k, st in lane_states.items():
        by_key[k[:2]][k[2]][k[3]] = st
    heads_out: list[dict[str, Any]] = []
    for key in keys:
        slice_id, backend_id = key
        intervals = sorted(grouped[key].items(), key=lambda kv: kv[0])
        # per check and source: the last interval judged and the last with a value (iso), its interval_s
        seen: dict[str, dict[str, dict[str, Any]]] = states[(*key, *HEAD)].get("seen", {})
        mine = by_key[key]
        events: list[tuple[bool, SlaViolation]] = []
        for check, limit in limits[slice_id]:
            by_source = seen.setdefault(check.metric, {})
            parsed = {
                src: (
                    datetime.fromisoformat(x["j"]),
                    datetime.fromisoformat(x["v"]) if x.get("v") else None,
                    float(x["i"]),
                )
                for src, x in by_source.items()
            }
            lanes = mine[check.metric]
            for (ts, src), rows in intervals:
                if src not in check.sources:
                    continue
                judged, valued, interval_s = parsed.get(src, (None, None, rows[0].interval_s))
                if judged is not None and ts <= judged:
                    continue  # judged already (stored again, or older than what its source sent since)
                values = None if check is RATE_CHECK else [(r.lane, getattr(r, check.metric), r) for r in rows]
                has_value = values is None or any(v is not None for _, v, _ in values)
                if has_value:
                    valued, interval_s = ts, rows[0].interval_s
                parsed[src] = (ts, valued, interval_s)
                judge = next((s for s in check.sources if _present(parsed.get(s), ts, hold)), None)
                if judge != src:
                    continue  # another source judges this check now
                iso = ts.isoformat()
                if check is RATE_CHECK:
                    delivered = sum(r.throughput_bps for r in rows) / 1e6
                    offered = sum(offered_mbps(r) for r in rows)
                    bad = offered > limit and delivered < limit
                    readings = [
                        (
                            SLICE_WIDE,
                            {
                                "ts": iso,
                                "i": rows[0].interval_s,
                                "v": delivered,
                                "o": offered,
                                "bad": bad,
                                **({"c": counter_totals(rows)} if bad else {}),
                            },
                        )
                    ]
                else:
                    assert values is not None
                    # only a bad reading or a lane with something pending can change anything: the
                    # good readings of lanes with no state are passed over without building a reading
                    pending = {ln for ln, st in lanes.items() if st.busy() and st.src == src}
                    acting: dict[int, tuple[float | None, KpiPoint | None]] = {}
                    for lane, value, r in values:
                        if lane not in acting and ((value is not None and value > limit) or lane in lanes):
                            acting[lane] = (value, r)
                    for lane in pending - {lane for lane, _, _ in values}:
                        acting[lane] = (None, None)  # no sample of a pending lane: not bad
                    readings = []
                    for lane in sorted(acting):
                        value, sample = acting[lane]
                        bad = value is not None and value > limit
                        readings.append(
                            (
                                lane,
                                {
                                    "ts": iso,
                                    "i": rows[0].interval_s,
                                    "v": value,
                                    "bad": bad,
                                    **({"c": counter_totals([sample])} if bad and sample else {}),
                                },
                            )
                        )
                for lane, reading in readings:
                    if lane not in lanes:
                        if not reading["bad"]:
                            continue  # nothing pending and nothing bad: nothing changes
                        lanes[lane] = lane_states[(*key, check.metric, lane)] = _LaneState(src=src)
                    st = lanes[lane]
                    if st.src != src:  # another source judges now: its runs start afresh
                        st.src, st.bad, st.good = src, [], []
                    ev.step(slice_id, backend_id, lane, check, limit, st, reading, events)
            by_source.update(
                {
                    src: {"j": j.isoformat(), "v": v.isoformat() if v else None, "i": i}
                    for src, (j, v, i) in parsed.items()
                }
            )
        heads_out.append(
            {
                "slice_id": slice_id,
                "backend_id": backend_id,
                "metric": HEAD[0],
                "lane": HEAD[1],
                "state": {"seen": seen},
            }
        )
        for opened, v in events:
            if opened and v.id is None and id(v) in ev.new:
                session.add(v)
            changed.append(v)
    session.flush()  # the new violations get their ids
    upserts, deletes = list(heads_out), []
    for (s_id, b_id, metric, lane), st in lane_states.items():
        if st.last_ts is None:
            continue  # not touched by this batch
        for attr in ("open_id", "closed_id"):
            ref = getattr(st, attr)
            if ref is not None and ref < 0:
                setattr(st, attr, ev.new[-ref].id)
        if st.empty(hold):
            if st.stored:
                deletes.append((s_id, b_id, metric, lane))
        else:
            upserts.append({"slice_id": s_id, "backend_id": b_id, "metric": metric, "lane": lane, "state": st.dump()})
    _write(session, upserts, deletes)
    return changed


def within_sla(session: Session, slice_id: int, since: datetime, until: datetime) -> list[tuple[int, int, int]]:
    """Per backend: intervals with a sample in (since, until], and how many of them lay inside
    a violation of that backend."""
    v = SlaViolation
    inside = (
        select(v.id)
        .where(
            v.slice_id == KpiSample.slice_id,
            v.backend_id == KpiSample.backend_id,
            v.started_at < KpiSample.ts,
            (v.ended_at.is_(None)) | (KpiSample.ts <= v.ended_at),
        )
        .exists()
    )
    rows = session.execute(
        select(
            KpiSample.backend_id,
            func.count(func.distinct(KpiSample.ts)),
            func.count(func.distinct(KpiSample.ts)).filter(inside),
        )
        .where(KpiSample.slice_id == slice_id, KpiSample.ts > since, KpiSample.ts <= until)
        .group_by(KpiSample.backend_id)
        .order_by(KpiSample.backend_id)
    )
    return [(b, total, bad) for b, total, bad in rows]
