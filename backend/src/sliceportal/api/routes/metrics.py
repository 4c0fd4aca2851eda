"""Prometheus exposition: per slice lane KPIs, and the portal's own metrics.

Names in base units (seconds, bytes, ratios; ``_total`` for counters). Every per-lane series
carries one label set, ``LANE_LABELS``: the tenant (slice names are unique per tenant only),
the slice's name, the backend's name, the catalogue lane and the KPI's source (counters,
probe, testbed; docs/kpis.md).

* counters (``sliceportal_lane_*_total``): the points this API process received since it
  started (``kpi.totals``); ``rate()`` gives packets / bytes per second;
* gauges: the newest sample of each (slice, backend, lane, source): throughput, loss ratio,
  delay and jitter (a KPI the source does not measure has no series: "not measured", never 0);
* the portal: deployments by kind and result, push durations (histogram), backends whose
  last reconcile found drift, open SLA violations; and this process's own timings
  (``core/process_metrics.py``): HTTP request durations by route (``RequestTimer``) and
  compile durations by driver (histograms).
"""

from __future__ import annotations

import time
from collections.abc import Iterable

from fastapi import Request
from fastapi.responses import PlainTextResponse
from prometheus_client import CollectorRegistry, Gauge, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, HistogramMetricFamily, Metric
from prometheus_client.exposition import CONTENT_TYPE_LATEST
from prometheus_client.registry import Collector
from sqlalchemy import func, select
from sqlalchemy.orm import Session
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from sliceportal.api.deps import NotTenant, SessionDep
from sliceportal.api.routing import API_PREFIX, session_router
from sliceportal.core import process_metrics
from sliceportal.kpi.hub import KpiHub
from sliceportal.models import Backend, Deployment, SlaViolation, Slice, Tenant
from sliceportal.models.queries import newest_samples

router = session_router(tags=["kpis"])
LANE_LABELS = ("tenant", "slice", "backend", "lane", "source")
# gauge -> (sample field, scale to base units, help)
GAUGES: dict[str, tuple[str, float, str]] = {
    "sliceportal_lane_throughput_bytes_per_second": (
        "throughput_bps",
        1 / 8,
        "Bytes per second delivered over the newest interval",
    ),
    "sliceportal_lane_loss_ratio": ("loss_pct", 1 / 100, "Share of the interval's packets lost (0-1)"),
    "sliceportal_lane_delay_p99_seconds": ("delay_p99_ms", 1e-3, "99th percentile delay in the newest interval"),
    "sliceportal_lane_delay_p50_seconds": ("delay_p50_ms", 1e-3, "Median delay in the newest interval"),
    "sliceportal_lane_delay_mean_seconds": ("delay_mean_ms", 1e-3, "Mean delay in the newest interval"),
    "sliceportal_lane_jitter_seconds": ("jitter_ms", 1e-3, "RFC 3550 interarrival jitter"),
}
# counter -> (kpi.totals field, help)
COUNTERS: dict[str, tuple[str, str]] = {
    "sliceportal_lane_sent_packets": ("tx_packets", "Packets offered to the lane"),
    "sliceportal_lane_received_packets": ("rx_packets", "Packets delivered by the lane"),
    "sliceportal_lane_sent_bytes": ("tx_bytes", "Bytes offered to the lane"),
    "sliceportal_lane_received_bytes": ("rx_bytes", "Bytes delivered by the lane"),
    "sliceportal_lane_dropped_packets": ("dropped", "Packets the data plane dropped (every cause)"),
    "sliceportal_lane_ecn_marked_packets": ("ecn_marks", "Packets ECN-marked by the lane's virtual queue"),
}
PUSH_BUCKETS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0)

# this process's HTTP requests, beside its compiles (core/process_metrics.py)
HTTP_DURATION = Histogram(
    "sliceportal_http_request_duration_seconds",
    "HTTP requests by route template",
    ("method", "route", "status"),
    registry=process_metrics.REGISTRY,
)


class RequestTimer:
    """ASGI middleware: each request's duration by method, route template and status (the
    template, not the path: one series per route, not per id). The live stream is left out:
    its duration is how long a dashboard stayed open."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        start = time.perf_counter()
        status = 500

        async def sending(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = int(message["status"])
            await send(message)

        try:
            await self.app(scope, receive, sending)
        finally:
            template = getattr(scope.get("route"), "path", None) or "unmatched"
            # the route object seen here may be the one declared in its module, before the
            # API router put its prefix in front: name the route as clients call it
            route = (
                API_PREFIX + template
                if scope["path"].startswith(API_PREFIX + "/")
                and not template.startswith(API_PREFIX)
                and template != "unmatched"
                else template
            )
            if not route.endswith("/kpis/stream"):
                HTTP_DURATION.labels(scope["method"], route, str(status)).observe(time.perf_counter() - start)


class _Portal(Collector):
    """Read at scrape time from the database (facts every process shares)."""

    def __init__(self, session: Session, hub: KpiHub | None) -> None:
        self.session, self.hub = session, hub

    def collect(self) -> Iterable[Metric]:
        s = self.session
        names = {i: n for i, n in s.execute(select(Backend.id, Backend.name))}
        slices = {
            i: (t, n)
            for i, n, t in s.execute(
                select(Slice.id, Slice.name, Tenant.name).join(Tenant, Tenant.id == Slice.tenant_id)
            )
        }
        if self.hub is not None:
            totals = self.hub.totals.snapshot()
            for name, (fieldname, help_) in COUNTERS.items():
                family = CounterMetricFamily(name, help_, labels=LANE_LABELS)
                for (sid, bid, lane, source), t in totals.items():
                    if sid in slices and bid in names:
                        family.add_metric([*slices[sid], names[bid], str(lane), source], t[fieldname])
                yield family
        deployments = CounterMetricFamily(
            "sliceportal_deployments", "Finished deployments by kind and result", labels=("kind", "result")
        )
        for kind, status, n in s.execute(
            select(Deployment.kind, Deployment.status, func.count())
            .where(Deployment.finished_at.is_not(None))
            .group_by(Deployment.kind, Deployment.status)
        ):
            deployments.add_metric([str(kind), str(status)], n)
        yield deployments
        d = Deployment.duration_s
        row = s.execute(
            select(
                func.count(d), func.coalesce(func.sum(d), 0.0), *[func.count(d).filter(d <= le) for le in PUSH_BUCKETS]
            ).where(d.is_not(None))
        ).one()
        total, seconds, *within = row
        push = HistogramMetricFamily(
            "sliceportal_push_duration_seconds", "Deploy / rollback durations: compile, push and verify"
        )
        push.add_metric(
            [],
            [*((str(le), int(n)) for le, n in zip(PUSH_BUCKETS, within, strict=True)), ("+Inf", int(total))],
            float(seconds or 0.0),
        )
        yield push
        drift = GaugeMetricFamily(
            "sliceportal_backend_reconcile_drift",
            "1 while the last reconcile found the data plane holding other entries",
            labels=("backend",),
        )
        for name, state in s.execute(select(Backend.name, Backend.sync_state)):
            drift.add_metric([name], 1.0 if state == "out_of_sync" else 0.0)
        yield drift


@router.get("/metrics", response_class=PlainTextResponse, include_in_schema=True)
def metrics(_: NotTenant, session: SessionDep, request: Request) -> PlainTextResponse:
    """Scrape with an API key (``Authorization: Bearer spk_...``) of scope read."""
    registry = CollectorRegistry()
    gauges = {name: Gauge(name, spec[2], LANE_LABELS, registry=registry) for name, spec in GAUGES.items()}
    violations = Gauge(
        "sliceportal_sla_violations_open", "Open SLA violations", ("tenant", "slice", "backend"), registry=registry
    )
    # newest sample per (slice, backend, lane, source) by the skip scan of newest_samples: a
    # GROUP BY max(ts) over kpi_sample read every sample ever stored on each scrape
    backend_names = {i: n for i, n in session.execute(select(Backend.id, Backend.name))}
    for slice_id, slice_name, tenant_name in session.execute(
        select(Slice.id, Slice.name, Tenant.name).join(Tenant, Tenant.id == Slice.tenant_id)
    ):
        for sample in newest_samples(session, slice_id):
            labels = (tenant_name, slice_name, backend_names[sample.backend_id], str(sample.lane), sample.source)
            for name, (fieldname, scale, _help) in GAUGES.items():
                value = getattr(sample, fieldname)
                if value is not None:
                    gauges[name].labels(*labels).set(value * scale)
    open_counts = session.execute(
        select(Tenant.name, Slice.name, Backend.name, func.count(SlaViolation.id))
        .join(Slice, Slice.tenant_id == Tenant.id)
        .join(SlaViolation, SlaViolation.slice_id == Slice.id)
        .join(Backend, Backend.id == SlaViolation.backend_id)
        .where(SlaViolation.ended_at.is_(None))
        .group_by(Tenant.name, Slice.name, Backend.name)
    )
    for tenant_name, slice_name, backend_name, n in open_counts:
        violations.labels(tenant_name, slice_name, backend_name).set(n)
    registry.register(_Portal(session, getattr(request.app.state, "kpi_hub", None)))
    body = generate_latest(registry) + generate_latest(process_metrics.REGISTRY)
    return PlainTextResponse(body, media_type=CONTENT_TYPE_LATEST)
