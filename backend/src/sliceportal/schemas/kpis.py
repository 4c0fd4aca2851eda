"""KPI samples, SLA violations (with their evidence) and SLA summaries as the API shows them."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, Field

from sliceportal.schemas.common import ORMModel


class KpiSamplePublic(ORMModel):
    slice_id: int
    backend_id: int
    lane: int | None = Field(description="catalogue lane; null when grouped by backend (all lanes summed)")
    source: str = Field(description="who measured it: counters (the data plane's own counters), probe (active "
                                    "probes), testbed (the emulator's traffic meter); docs/kpis.md")
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
    samples: list[KpiSamplePublic] = Field(description="the lane's samples from before the start to after the end")


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
