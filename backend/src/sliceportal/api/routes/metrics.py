"""Prometheus exposition of the latest KPI per slice, backend and lane, labelled by tenant."""

from __future__ import annotations

from fastapi import APIRouter
from fastapi.responses import PlainTextResponse
from prometheus_client import CollectorRegistry, Gauge, generate_latest
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from sqlalchemy import func, select

from sliceportal.api.deps import NotTenant, SessionDep
from sliceportal.models import Backend, SlaViolation, Slice, Tenant
from sliceportal.models.queries import newest_samples

router = APIRouter(tags=["kpis"])
LABELS = ("tenant", "slice", "slice_id", "backend", "lane", "source")
GAUGES = {
    "throughput_bps": "Received throughput in bits per second over the last interval",
    "loss_pct": "Packets lost in the last interval, percent",
    "delay_p99_ms": "99th percentile one-way delay in the last interval, ms",
    "delay_mean_ms": "Mean one-way delay in the last interval, ms",
    "jitter_ms": "RFC 3550 interarrival jitter, ms",
    "ecn_marks": "ECN-marked packets in the last interval",
}


@router.get("/metrics", response_class=PlainTextResponse, include_in_schema=True)
def metrics(_: NotTenant, session: SessionDep) -> PlainTextResponse:
    """Scrape with an API key (``Authorization: Bearer spk_...``) of scope read."""
    registry = CollectorRegistry()
    gauges = {name: Gauge(f"sliceportal_slice_{name}", help_, LABELS, registry=registry)
              for name, help_ in GAUGES.items()}
    violations = Gauge("sliceportal_slice_sla_violations_open", "Open SLA violations",
                       ("tenant", "slice", "slice_id", "backend"), registry=registry)
    # newest sample per (slice, backend, lane) by the skip scan of newest_samples: a GROUP BY
    # max(ts) over kpi_sample read every sample ever stored on each scrape
    backend_names = {i: n for i, n in session.execute(select(Backend.id, Backend.name))}
    for slice_id, slice_name, tenant_name in session.execute(
            select(Slice.id, Slice.name, Tenant.name).join(Tenant, Tenant.id == Slice.tenant_id)):
        for sample in newest_samples(session, slice_id):
            labels = (tenant_name, slice_name, str(slice_id), backend_names[sample.backend_id], str(sample.lane),
                      sample.source)
            for name, gauge in gauges.items():
                value = getattr(sample, name)
                if value is not None:
                    gauge.labels(*labels).set(value)
    open_counts = session.execute(
        select(Tenant.name, Slice.name, Slice.id, Backend.name, func.count(SlaViolation.id))
        .join(Slice, Slice.tenant_id == Tenant.id).join(SlaViolation, SlaViolation.slice_id == Slice.id)
        .join(Backend, Backend.id == SlaViolation.backend_id)
        .where(SlaViolation.ended_at.is_(None)).group_by(Tenant.name, Slice.name, Slice.id, Backend.name))
    for tenant_name, slice_name, sid, backend_name, n in open_counts:
        violations.labels(tenant_name, slice_name, str(sid), backend_name).set(n)
    return PlainTextResponse(generate_latest(registry), media_type=CONTENT_TYPE_LATEST)
