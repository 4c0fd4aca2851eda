"""The SLA evaluation on random series (real PostgreSQL) against a from-scratch reference:
the hold-down of docs/kpis.md written as a plain function over the whole series, with the
merge of re-openings within ``merge_within_s`` (issue #29). The evaluator keeps only each
check's runs of bad / good readings in ``sla_check_state`` and judges only the intervals a
batch brings; whether the series arrives one interval at a time, in one batch or in random
chunks, its violations must be the reference's."""

from __future__ import annotations

import itertools
from datetime import UTC, datetime, timedelta

from fastapi.testclient import TestClient
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.sla import HoldDown
from sliceportal.kpi.store import ingest
from sliceportal.models import Backend, SlaViolation
from tests.factories import DUAL, add_slice, add_tenant

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
LIMIT = 1.0  # the slice's max_loss_pct
LANES = (0, 2)

# one interval: each lane's loss %, or None where that lane has no sample (at least one has)
interval = st.tuples(*(st.one_of(st.none(), st.sampled_from([0.0, 0.5, 5.0, 9.0])) for _ in LANES)).filter(
    lambda losses: any(v is not None for v in losses)
)
# runs of equal intervals: hold-down patterns (N bad in a row, M good in a row, one bad amid goods)
series_of = st.lists(st.tuples(interval, st.integers(1, 6)), min_size=1, max_size=7).map(
    lambda runs: [losses for losses, n in runs for _ in range(n)][:24]
)
Violation = tuple[int, datetime, datetime | None, float]  # lane, started_at, ended_at, worst


def reference(series: list[tuple[float | None, ...]], hold: HoldDown) -> list[Violation]:
    """The hold-down judged from scratch over the whole series, lane by lane."""
    out: list[Violation] = []
    for i, lane in enumerate(LANES):
        closed: Violation | None = None  # the lane's last violation, while a re-opening may continue it
        readings = [(T0 + timedelta(seconds=t), losses[i]) for t, losses in enumerate(series)]
        bad = [v is not None and v > LIMIT for _, v in readings]
        start: datetime | None = None
        worst = 0.0
        for k, (_, value) in enumerate(readings):
            if start is None:
                if k + 1 >= hold.open_after and all(bad[k + 1 - hold.open_after : k + 1]):
                    start = readings[k + 1 - hold.open_after][0] - timedelta(seconds=1)
                    worst = max(v for _, v in readings[k + 1 - hold.open_after : k + 1] if v is not None)
                    if (
                        closed is not None
                        and closed[2] is not None
                        and hold.merge_within_s > 0
                        and (start - closed[2]).total_seconds() <= hold.merge_within_s
                    ):
                        out.remove(closed)  # a flap: the last violation goes on
                        start, worst = closed[1], max(worst, closed[3])
            elif bad[k]:
                assert value is not None
                worst = max(worst, value)
            elif k + 1 >= hold.close_after and not any(bad[k + 1 - hold.close_after : k + 1]):
                last_bad = max(j for j in range(k + 1) if bad[j])
                end = readings[last_bad][0]
                closed = (
                    lane,
                    start,
                    end if end > start else readings[k + 1 - hold.close_after][0] - timedelta(seconds=1),
                    worst,
                )
                out.append(closed)
                start = None
        if start is not None:
            out.append((lane, start, None, worst))
    return sorted(out, key=lambda v: (v[0], v[1]))


def _points(slice_id: int, backend_id: int, series: list[tuple[float | None, ...]], first: int = 0) -> list[KpiPoint]:
    return [
        KpiPoint(
            slice_id=slice_id,
            backend_id=backend_id,
            lane=lane,
            source="testbed",
            ts=T0 + timedelta(seconds=first + t),
            tx_packets=1000,
            rx_packets=int(1000 * (1 - loss / 100)),
            loss_pct=loss,
            delay_p99_ms=1.0,
            jitter_ms=0.1,
        )
        for t, losses in enumerate(series)
        for lane, loss in zip(LANES, losses, strict=True)
        if loss is not None
    ]


def _stored(session: Session, slice_id: int, backend_id: int) -> list[Violation]:
    rows = list(
        session.scalars(
            select(SlaViolation).where(SlaViolation.slice_id == slice_id, SlaViolation.backend_id == backend_id)
        )
    )
    assert all(v.metric == "loss_pct" for v in rows)
    return sorted(((v.lane, v.started_at, v.ended_at, v.worst) for v in rows), key=lambda v: (v[0], v[1]))


def test_random_series_judge_as_the_reference(client: TestClient, session: Session, op: dict[str, str]) -> None:
    slice_id = add_slice(client, op, add_tenant(client, op, "red", 1, 1), "s", DUAL, sla={"max_loss_pct": LIMIT})
    runs = iter(range(10_000))

    def backend() -> int:
        b = Backend(name=f"series-{next(runs)}", driver="xdp")  # a fresh key for every arrival order
        session.add(b)
        session.commit()
        return b.id

    @settings(max_examples=12, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
    # merge_within_s: none, one that merges a flap of five good intervals but not one of ten, all
    @given(series=series_of, cuts=st.lists(st.integers(1, 23), max_size=4), merge=st.sampled_from([0.0, 7.0, 60.0]))
    def check(series: list[tuple[float | None, ...]], cuts: list[int], merge: float) -> None:
        hold = HoldDown(open_after=3, close_after=5, merge_within_s=merge)
        expected = reference(series, hold)
        one_by_one, whole, chunked = backend(), backend(), backend()
        for t in range(len(series)):
            ingest(session, _points(slice_id, one_by_one, series[t : t + 1], first=t), hold=hold)
        ingest(session, _points(slice_id, whole, series), hold=hold)
        bounds = [0, *sorted({c for c in cuts if c < len(series)}), len(series)]
        for lo, hi in itertools.pairwise(bounds):
            ingest(session, _points(slice_id, chunked, series[lo:hi], first=lo), hold=hold)
        # and storing the whole series again (a restarted source) changes nothing
        ingest(session, _points(slice_id, chunked, series), hold=hold)
        for b in (one_by_one, whole, chunked):
            assert _stored(session, slice_id, b) == expected, (b, series)

    check()
