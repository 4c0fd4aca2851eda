"""A KPI point: one slice, one lane, one interval — what every source produces."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime

from pydantic import BaseModel, Field

from sliceportal.traffic.meter import MeterReport


class KpiPoint(BaseModel):
    slice_id: int  # the portal's slice id
    lane: int  # the slice's catalogue lane (seed 000 Table 1)
    ts: datetime  # end of the interval
    interval_s: float = 1.0
    tx_packets: int = 0
    rx_packets: int = 0
    tx_bytes: int = 0
    rx_bytes: int = 0
    throughput_bps: float = 0.0
    loss_pct: float = 0.0
    delay_mean_ms: float | None = None
    delay_p50_ms: float | None = None
    delay_p99_ms: float | None = None
    jitter_ms: float | None = None
    drops: dict[str, int] = Field(default_factory=dict)
    ecn_marks: int = 0


def points_from_meter(report: MeterReport, slices: Mapping[int, int], ts: datetime,
                      interval_s: float) -> list[KpiPoint]:
    """Per (slice, lane) points from one meter interval; ``slices`` maps the traffic
    scenario's slice index to the portal's slice id (unknown indexes are left out)."""
    points = []
    for g in report.lanes:
        if g.slice_index is None or g.lane is None or g.slice_index not in slices:
            continue
        d = g.delay
        points.append(KpiPoint(
            slice_id=slices[g.slice_index], lane=g.lane, ts=ts, interval_s=interval_s,
            tx_packets=g.expected, rx_packets=g.received, rx_bytes=g.bytes,
            throughput_bps=g.bytes * 8 / interval_s, loss_pct=g.loss_pct,
            delay_mean_ms=d.mean_us / 1e3 if d else None, delay_p50_ms=d.p50_us / 1e3 if d else None,
            delay_p99_ms=d.p99_us / 1e3 if d else None, jitter_ms=g.jitter_us / 1e3 if d else None,
        ))
    return points
