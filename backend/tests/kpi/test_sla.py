"""The SLA state machine on real PostgreSQL, against expectations computed by hand:
hold-down (open after N bad intervals, close after M good ones), the guaranteed rate
(offered above it and delivered below it), close on recovery, the evidence kept, % of
time within SLA and the explain / history APIs."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.sla import HoldDown
from sliceportal.kpi.store import ingest
from sliceportal.models import Deployment, DeploymentKind, DeploymentStatus, RuleSet, SlaViolation
from tests.factories import DUAL, add_slice, add_tenant, backend_row

T0 = datetime(2026, 11, 22, 12, 0, tzinfo=UTC)
HOLD = HoldDown(open_after=3, close_after=5)
# Loss % of lane 0, one value per second from T0+0 s. Bad (> 1 %) at 1, 2 (only two: no
# violation), then 4-8 (opens at 6, the third bad; worst 9 at 7), good 9-10, bad 11
# (closing starts over), good 12-16 (the fifth good, at 16, closes it), good 17.
LOSS = [0, 5, 5, 0, 5, 5, 5, 9, 5, 0, 0, 5, 0, 0, 0, 0, 0, 0]


@pytest.fixture
def world(client: TestClient, session: Session, op: dict[str, str]) -> dict[str, object]:
    backend = backend_row(session)
    t = add_tenant(client, op, "red", 1, 1)
    sla = {"max_loss_pct": 1, "max_delay_ms": 10, "guaranteed_mbps": 10, "rate_limit_mbps": 40}
    ids = {
        name: add_slice(client, op, t, name, DUAL, backend_ids=[backend], sla=sla)
        for name in ("stream", "batch", "rate")
    }
    return {"op": op, "backend": backend, "ids": ids}


def _point(
    slice_id: int,
    backend_id: int,
    second: int,
    lane: int = 0,
    loss: float = 0.0,
    offered_mbps: float = 4.0,
    delivered_mbps: float | None = None,
    drops: int = 0,
) -> KpiPoint:
    delivered = offered_mbps if delivered_mbps is None else delivered_mbps
    return KpiPoint(
        slice_id=slice_id,
        backend_id=backend_id,
        lane=lane,
        source="testbed",
        ts=T0 + timedelta(seconds=second),
        tx_packets=1000,
        rx_packets=int(1000 * (1 - loss / 100)),
        tx_bytes=int(offered_mbps * 1e6 / 8),
        rx_bytes=int(delivered * 1e6 / 8),
        throughput_bps=delivered * 1e6,
        loss_pct=loss,
        delay_p99_ms=1.0,
        jitter_ms=0.1,
        drops={"vq_burst": drops} if drops else {},
    )


def _loss_violations(session: Session, slice_id: int) -> list[tuple[object, ...]]:
    return [
        (v.lane, v.metric, v.threshold, v.worst, v.started_at, v.ended_at)
        for v in session.scalars(
            select(SlaViolation).where(SlaViolation.slice_id == slice_id).order_by(SlaViolation.id)
        )
    ]


def test_hold_down_opens_after_n_bad_and_closes_after_m_good(session: Session, world: dict[str, object]) -> None:
    ids, b = world["ids"], world["backend"]
    assert isinstance(ids, dict) and isinstance(b, int)
    opened_at = closed_at = None
    for second, loss in enumerate(LOSS):  # one interval at a time, as the live collector stores them
        changed = ingest(session, [_point(ids["stream"], b, second, loss=loss)], hold=HOLD)
        if changed and changed[0].ended_at is None:
            opened_at = second
        elif changed:
            closed_at = second
    assert (opened_at, closed_at) == (6, 16)
    expected = [(0, "loss_pct", 1.0, 9.0, T0 + timedelta(seconds=3), T0 + timedelta(seconds=11))]
    assert _loss_violations(session, ids["stream"]) == expected
    # the same intervals stored in one batch judge the same
    ingest(session, [_point(ids["batch"], b, s, loss=loss) for s, loss in enumerate(LOSS)], hold=HOLD)
    assert _loss_violations(session, ids["batch"]) == expected
    # storing an interval again (a restarted collector) opens nothing new
    ingest(session, [_point(ids["batch"], b, s, loss=loss) for s, loss in enumerate(LOSS)], hold=HOLD)
    assert _loss_violations(session, ids["batch"]) == expected
    v = session.scalars(select(SlaViolation).where(SlaViolation.slice_id == ids["stream"])).one()
    assert [(e["ts"][17:19], e["value"]) for e in v.evidence["opened_by"]] == [("04", 5), ("05", 5), ("06", 5)]
    assert [e["ts"][17:19] for e in v.evidence["closed_by"]] == ["12", "13", "14", "15", "16"]
    assert v.evidence["hold_down"] == {"open_after": 3, "close_after": 5, "merge_within_s": 0.0}
    assert v.evidence["counters"]["tx_packets"] == 3000 and v.evidence["counters"]["rx_packets"] == 3 * 950


def test_guaranteed_rate(session: Session, world: dict[str, object]) -> None:
    """Guarantee 10 Mbit/s over both lanes. Offered 8, delivered 8: below the guarantee but
    so is the demand — fine. Offered 20, delivered 9 / 6 / 7: short three times — opens,
    worst 6. Delivered 12 from 7 on: five good intervals close it at 11."""
    ids, b = world["ids"], world["backend"]
    assert isinstance(ids, dict) and isinstance(b, int)
    # the rule set in force on the backend is part of the evidence
    rs = RuleSet(backend_id=b, number=4, digest="d4", ir={}, plan={})
    session.add(rs)
    session.flush()
    session.add(
        Deployment(
            backend_id=b,
            rule_set_id=rs.id,
            status=DeploymentStatus.SUCCEEDED,
            kind=DeploymentKind.DEPLOY,
            finished_at=T0,
        )
    )
    session.commit()
    delivered = [8, 8, 8, 8, 9, 6, 7, 12, 12, 12, 12, 12, 12]
    offered = [8, 8, 8, 8, 20, 20, 20, 20, 20, 20, 20, 20, 20]
    opened = closed = None
    for s, (o, d) in enumerate(zip(offered, delivered, strict=True)):
        # two lanes, half each; the short intervals show the data plane's drops
        changed = ingest(
            session,
            [
                _point(
                    ids["rate"],
                    b,
                    s,
                    lane=lane,
                    offered_mbps=o / 2,
                    delivered_mbps=d / 2,
                    drops=100 if d < 10 < o else 0,
                )
                for lane in (0, 2)
            ],
            hold=HOLD,
        )
        for v in changed:
            if v.ended_at is None:
                opened = s
            else:
                closed = s
    assert (opened, closed) == (6, 11)
    v = session.scalars(select(SlaViolation).where(SlaViolation.slice_id == ids["rate"])).one()
    assert (v.lane, v.metric, v.threshold, v.worst) == (None, "throughput_mbps", 10.0, 6.0)
    assert (v.started_at, v.ended_at) == (T0 + timedelta(seconds=3), T0 + timedelta(seconds=6))
    assert v.detail["direction"] == "below"
    assert [e["offered_mbps"] for e in v.evidence["opened_by"]] == [20, 20, 20]
    assert v.evidence["rule_set"] == {"id": rs.id, "number": 4, "digest": "d4"}
    assert v.evidence["counters"]["drops"] == {"vq_burst": 3 * 2 * 100}


def test_history_within_sla_and_explain(client: TestClient, session: Session, world: dict[str, object]) -> None:
    ids, b, op = world["ids"], world["backend"], world["op"]
    assert isinstance(ids, dict) and isinstance(b, int) and isinstance(op, dict)
    ingest(session, [_point(ids["stream"], b, s, loss=loss) for s, loss in enumerate(LOSS)], hold=HOLD)
    window = {"since": (T0 - timedelta(seconds=1)).isoformat(), "until": (T0 + timedelta(seconds=17)).isoformat()}
    # 18 intervals measured; those in (T0+3, T0+11] — seconds 4..11, eight — inside the violation
    sla = client.get(f"/api/v1/slices/{ids['stream']}/sla", params=window, headers=op).json()
    assert sla["backends"] == [
        {
            "backend_id": b,
            "intervals": 18,
            "within_sla_pct": round(100 * 10 / 18, 2),
            "violations": 1,
            "open_violations": 0,
        }
    ]
    history = client.get("/api/v1/violations", params={**window, "slice_id": ids["stream"]}, headers=op).json()
    assert history["count"] == 1
    later = {"since": (T0 + timedelta(seconds=12)).isoformat(), "until": (T0 + timedelta(hours=1)).isoformat()}
    assert (
        client.get("/api/v1/violations", params={**later, "slice_id": ids["stream"]}, headers=op).json()["count"] == 0
    )
    vid = history["data"][0]["id"]
    ex = client.get(f"/api/v1/violations/{vid}/explain", headers=op).json()
    assert [e["value"] for e in ex["opened_by"]] == [5, 5, 5] and len(ex["closed_by"]) == 5
    assert ex["hold_down"] == {"open_after": 3, "close_after": 5, "merge_within_s": 0.0} and ex["rule_set"] is None
    # the lane's samples from before the start to after the end: seconds 2..17
    assert [p["ts"][17:19] for p in ex["samples"]] == [f"{s:02d}" for s in range(2, 18)]
    bad = client.get(
        f"/api/v1/slices/{ids['stream']}/sla", params={"since": window["until"], "until": window["since"]}, headers=op
    )
    assert bad.status_code == 422 and bad.json()["errors"][0]["field"] == "since"
    assert client.get("/api/v1/violations/999999/explain", headers=op).status_code == 404


def test_explain_shows_the_judging_source_only(client: TestClient, session: Session, world: dict[str, object]) -> None:
    """The data plane's counters report the same lane beside the testbed's meter, at their own
    interval boundaries and with other values (the P4 target counts no queue drops); the meter
    judges, and the explanation's chart is its samples alone, never the two in one line."""
    ids, b, op = world["ids"], world["backend"], world["op"]
    assert isinstance(ids, dict) and isinstance(b, int) and isinstance(op, dict)
    for s, loss in enumerate(LOSS):
        counted = _point(ids["stream"], b, s, drops=7).model_copy(
            update={"source": "counters", "ts": T0 + timedelta(seconds=s + 0.5), "jitter_ms": None}
        )
        ingest(session, [_point(ids["stream"], b, s, loss=loss), counted], hold=HOLD)
    (v,) = session.scalars(select(SlaViolation).where(SlaViolation.slice_id == ids["stream"]))
    assert v.evidence["source"] == "testbed"
    ex = client.get(f"/api/v1/violations/{v.id}/explain", headers=op).json()
    assert ex["source"] == "testbed"
    assert {p["source"] for p in ex["samples"]} == {"testbed"}
    assert [p["ts"][17:19] for p in ex["samples"]] == [f"{s:02d}" for s in range(2, 18)]
    # the box of the data plane's counters: the collector's samples of the opening intervals
    # (started T0+3; opened by the intervals ending T0+4..6: the counters' T0+3.5..5.5)
    assert ex["counters"]["drops"] == {"vq_burst": 3 * 7} and ex["counters"]["tx_packets"] == 3 * 1000
