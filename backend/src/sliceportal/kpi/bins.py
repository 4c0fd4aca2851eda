"""KPI samples combined into longer intervals, in the database, for long time ranges.

Per (backend, lane, source) and bin: counts summed, throughput from the bytes over the time
measured, loss from the summed counts, the worst p99 delay, mean delays and jitter
averaged. A bin's ``ts`` is its end, like a sample's.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from sqlalchemy import ColumnElement, Float, case, cast, func, literal, select
from sqlalchemy.orm import Session

from sliceportal.kpi.points import KpiPoint
from sliceportal.models import KpiSample

ORIGIN = datetime(2000, 1, 1, tzinfo=UTC)


def binned_samples(session: Session, where: list[ColumnElement[bool]], step_s: int, limit: int) -> list[KpiPoint]:
    k = KpiSample
    width = func.make_interval(0, 0, 0, 0, 0, 0, step_s)
    end = (func.date_bin(width, k.ts - func.make_interval(0, 0, 0, 0, 0, 0, 0.000001), literal(ORIGIN)) + width).label(
        "bin"
    )
    tx, rx = func.sum(k.tx_packets), func.sum(k.rx_packets)
    measured = func.sum(k.interval_s)
    stmt = (
        select(
            k.slice_id,
            k.backend_id,
            k.lane,
            k.source,
            end,
            measured,
            tx,
            rx,
            func.sum(k.tx_bytes),
            func.sum(k.rx_bytes),
            func.sum(k.rx_bytes) * 8.0 / measured,
            case((tx > 0, 100.0 * func.greatest(tx - rx, 0) / cast(tx, Float)), else_=0.0),
            func.avg(k.delay_mean_ms),
            func.avg(k.delay_p50_ms),
            func.max(k.delay_p99_ms),
            func.avg(k.jitter_ms),
            func.sum(k.ecn_marks),
        )
        .where(*where)
        .group_by(k.slice_id, k.backend_id, k.lane, k.source, end)
        .order_by(end.desc(), k.backend_id, k.lane, k.source)
        .limit(limit)
    )
    out: list[KpiPoint] = []
    for row in session.execute(stmt):
        (
            slice_id,
            backend_id,
            lane,
            source,
            ts,
            interval_s,
            tx_p,
            rx_p,
            tx_b,
            rx_b,
            thr,
            loss,
            dmean,
            d50,
            d99,
            jit,
            ecn,
        ) = row
        fields: dict[str, Any] = dict(
            slice_id=slice_id,
            backend_id=backend_id,
            lane=lane,
            source=source,
            ts=ts,
            interval_s=float(interval_s),
            tx_packets=int(tx_p),
            rx_packets=int(rx_p),
            tx_bytes=int(tx_b),
            rx_bytes=int(rx_b),
            throughput_bps=float(thr),
            loss_pct=float(loss),
            delay_mean_ms=dmean,
            delay_p50_ms=d50,
            delay_p99_ms=d99,
            jitter_ms=jit,
            drops={},
            ecn_marks=int(ecn),
        )
        out.append(KpiPoint(**fields))
    out.reverse()
    return out
