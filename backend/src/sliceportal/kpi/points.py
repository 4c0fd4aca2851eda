"""A KPI point: one slice, one backend, one lane, one interval — what every source produces."""

from __future__ import annotations

from collections.abc import Mapping
from datetime import datetime
from typing import Literal

from pydantic import BaseModel, Field, PrivateAttr

from sliceportal.traffic.meter import MeterReport

# Who measured a point (docs/kpis.md, "Sources"): the KPI collector from the data plane's own
# counters, active probes through the ingest API, the testbed's traffic meter.
Source = Literal["counters", "probe", "testbed"]
SOURCES: tuple[Source, ...] = ("counters", "probe", "testbed")


class KpiPoint(BaseModel):
    slice_id: int  # the portal's slice id
    backend_id: int  # the data plane whose egress was measured (issue #12: KPIs keyed by backend)
    lane: int  # the slice's catalogue lane (seed 000 Table 1)
    source: Source
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
    _json: str | None = PrivateAttr(default=None)

    def as_json(self) -> str:
        """The point as JSON, encoded once: every live stream that gets it sends the same text
        (with a hundred dashboards open, encoding per stream was most of a publish's cost)."""
        if self._json is None:
            self._json = self.model_dump_json()
        return self._json

    def __eq__(self, other: object) -> bool:
        # the same point whether or not its JSON was cached (pydantic compares private attributes)
        return type(other) is type(self) and self.__dict__ == other.__dict__


def points_from_meter(
    report: MeterReport, slices: Mapping[int, int], ts: datetime, interval_s: float, backend_id: int
) -> list[KpiPoint]:
    """Per (slice, lane) points from one meter interval on ``backend_id``'s egress;
    ``slices`` maps the traffic scenario's slice index to the portal's slice id (unknown
    indexes are left out)."""
    points = []
    for g in report.lanes:
        if g.slice_index is None or g.lane is None or g.slice_index not in slices:
            continue
        d = g.delay
        points.append(
            KpiPoint(
                slice_id=slices[g.slice_index],
                backend_id=backend_id,
                lane=g.lane,
                source="testbed",
                ts=ts,
                interval_s=interval_s,
                # offered bytes: the sender's packet count at the received mean size (the meter
                # sees only what arrived; sizes are constant per flow in the generator)
                tx_packets=g.expected,
                rx_packets=g.received,
                rx_bytes=g.bytes,
                tx_bytes=round(g.expected * g.bytes / g.received) if g.received else 0,
                throughput_bps=g.bytes * 8 / interval_s,
                loss_pct=g.loss_pct,
                delay_mean_ms=d.mean_us / 1e3 if d else None,
                delay_p50_ms=d.p50_us / 1e3 if d else None,
                delay_p99_ms=d.p99_us / 1e3 if d else None,
                jitter_ms=g.jitter_us / 1e3 if d else None,
            )
        )
    return points


def combine_lanes(points: list[KpiPoint]) -> KpiPoint:
    """One slice-wide point from its lanes' points of one interval on one backend and source: counts
    and throughput summed, loss from the summed counts, the worst p99, the mean delays
    and jitter weighted by packets received."""
    first = points[0]
    tx, rx = sum(p.tx_packets for p in points), sum(p.rx_packets for p in points)

    def weighted(field: str) -> float | None:
        pairs = [(getattr(p, field), p.rx_packets) for p in points if getattr(p, field) is not None]
        weight = sum(w for _, w in pairs)
        return sum(v * w for v, w in pairs) / weight if weight else None

    p99s = [p.delay_p99_ms for p in points if p.delay_p99_ms is not None]
    drops: dict[str, int] = {}
    for p in points:
        for reason, n in p.drops.items():
            drops[reason] = drops.get(reason, 0) + n
    return KpiPoint(
        slice_id=first.slice_id,
        backend_id=first.backend_id,
        lane=-1,
        source=first.source,
        ts=first.ts,
        interval_s=first.interval_s,
        tx_packets=tx,
        rx_packets=rx,
        tx_bytes=sum(p.tx_bytes for p in points),
        rx_bytes=sum(p.rx_bytes for p in points),
        throughput_bps=sum(p.throughput_bps for p in points),
        loss_pct=100.0 * max(tx - rx, 0) / tx if tx else 0.0,
        delay_mean_ms=weighted("delay_mean_ms"),
        delay_p50_ms=weighted("delay_p50_ms"),
        delay_p99_ms=max(p99s) if p99s else None,
        jitter_ms=weighted("jitter_ms"),
        drops=drops,
        ecn_marks=sum(p.ecn_marks for p in points),
    )
