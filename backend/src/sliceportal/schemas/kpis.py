"""KPI samples, SLA violations (with their evidence) and SLA summaries as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import AwareDatetime, BaseModel, ConfigDict, Field, model_validator

from sliceportal.kpi.points import KpiPoint
from sliceportal.schemas.common import DbId, ORMModel

MAX_COUNT = (1 << 63) - 1  # BIGINT


class KpiSamplePublic(ORMModel):
    slice_id: int
    backend_id: int
    lane: int | None = Field(description="catalogue lane; null when grouped by backend (all lanes summed)")
    source: str = Field(
        description="who measured it: counters (the data plane's own counters), probe (active "
        "probes), testbed (the emulator's traffic meter); docs/kpis.md"
    )
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
    backend_id: int
    backend_name: str
    lane: int | None = Field(description="null: the whole slice (guaranteed rate)")
    metric: str
    threshold: float
    worst: float
    started_at: datetime = Field(description="start of the first interval out of bounds")
    ended_at: datetime | None = Field(description="end of the last interval out of bounds; null while open")
    detail: dict[str, Any] = Field(description="direction: above (a ceiling) or below (the guaranteed rate)")


class EvidenceSample(BaseModel):
    ts: datetime
    lane: int | None
    value: float | None
    offered_mbps: float | None = None


class SlaViolationExplained(SlaViolationPublic):
    """One violation and why: the samples that opened and closed it, the hold-down in force,
    the rule set the data plane held and its counters over the opening samples."""

    opened_by: list[EvidenceSample]
    closed_by: list[EvidenceSample]
    hold_down: dict[str, int]
    rule_set: dict[str, Any] | None
    counters: dict[str, Any]
    source: str | None = Field(
        None, description="whose samples judged it (docs/kpis.md, Sources); null for violations stored before #25"
    )
    samples: list[KpiSamplePublic] = Field(
        description="the lane's samples of that source from before the start to after the end"
    )


class SlaBackendSummary(BaseModel):
    backend_id: int
    intervals: int = Field(description="intervals with a sample in the window")
    within_sla_pct: float | None = Field(description="intervals not inside a violation; null without samples")
    violations: int
    open_violations: int


class SlaSummary(BaseModel):
    slice_id: int
    since: datetime
    until: datetime
    backends: list[SlaBackendSummary]


# ---- the ingest API (api/routes/telemetry.py) ------------------------------------------

MAX_INGEST_POINTS = 2_000  # points per request: < 1 MiB of JSON (the API's body limit), one transaction


class IngestPoint(KpiPoint):
    """One measured interval of one slice lane on one backend, from a source outside the portal.

    A ``KpiPoint`` with stricter limits: validated once, stored as it is (building a second
    model per point was half of a 2 000-point request's time)."""

    model_config = ConfigDict(extra="forbid")
    slice_id: DbId
    backend_id: DbId = Field(description="the data plane the measured traffic crossed")
    lane: int = Field(ge=0, le=7, description="the slice type's catalogue lane")
    source: Literal["probe", "testbed"] = Field(
        description="who measured it; 'counters' is the portal's own collector and cannot be posted"
    )
    ts: AwareDatetime = Field(description="end of the interval, with a time zone")
    interval_s: float = Field(1.0, gt=0, le=3600)
    tx_packets: int = Field(0, ge=0, le=MAX_COUNT, description="packets sent (offered)")
    rx_packets: int = Field(0, ge=0, le=MAX_COUNT, description="packets received")
    tx_bytes: int = Field(0, ge=0, le=MAX_COUNT)
    rx_bytes: int = Field(0, ge=0, le=MAX_COUNT)
    throughput_bps: float = Field(0.0, ge=0, le=1e13)
    loss_pct: float = Field(0.0, ge=0, le=100)
    delay_mean_ms: float | None = Field(None, ge=0, le=3.6e6, description="null: not measured")
    delay_p50_ms: float | None = Field(None, ge=0, le=3.6e6)
    delay_p99_ms: float | None = Field(None, ge=0, le=3.6e6)
    jitter_ms: float | None = Field(None, ge=0, le=3.6e6)
    drops: dict[Annotated[str, Field(min_length=1, max_length=32)], Annotated[int, Field(ge=0, le=MAX_COUNT)]] = Field(
        default_factory=dict, max_length=16
    )
    ecn_marks: int = Field(0, ge=0, le=MAX_COUNT)

    @model_validator(mode="after")
    def _consistent(self) -> IngestPoint:
        if self.rx_packets > self.tx_packets > 0:
            raise ValueError("rx_packets exceeds tx_packets")
        return self


class IngestBatch(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "points": [
                        {
                            "slice_id": 1,
                            "backend_id": 1,
                            "lane": 2,
                            "source": "probe",
                            "ts": "2026-11-28T12:00:01Z",
                            "interval_s": 1.0,
                            "tx_packets": 10,
                            "rx_packets": 10,
                            "delay_mean_ms": 4.2,
                            "delay_p50_ms": 4.0,
                            "delay_p99_ms": 7.9,
                            "jitter_ms": 0.6,
                        }
                    ]
                }
            ]
        },
    )
    points: list[IngestPoint] = Field(min_length=1, max_length=MAX_INGEST_POINTS)


class IngestResult(BaseModel):
    stored: int
    violations_changed: int = Field(description="SLA violations the points opened or closed")
