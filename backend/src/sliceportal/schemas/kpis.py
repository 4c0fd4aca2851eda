from __future__ import annotations

from datetime import datetime

from sliceportal.schemas.common import ORMModel


class KpiSamplePublic(ORMModel):
    slice_id: int
    lane: int
    ts: datetime
    interval_s: float
    tx_packets: int
    rx_packets: int
    tx_bytes: int
    rx_bytes: int
    throughput_bps: float
    loss_pct: float
    delay_mean_ms: float | None
    delay_p50_ms: float | None
    delay_p99_ms: float | None
    jitter_ms: float | None
    drops: dict[str, int]
    ecn_marks: int


class SlaViolationPublic(ORMModel):
    id: int
    slice_id: int
    lane: int | None
    metric: str
    threshold: float
    worst: float
    started_at: datetime
    ended_at: datetime | None
