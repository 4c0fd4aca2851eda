"""This process's own Prometheus metrics (timings only it sees), served beside the shared ones.

Facts every process shares (deployments, KPIs, violations) are read from the database at scrape
time (``api/routes/metrics.py``); what is measured while a request runs lives here, per
process: a scrape of one API worker shows that worker's requests and compiles, as
``sliceportal_http_request_duration_seconds`` always did. Below the API layer, so that the
services time their own work without knowing HTTP.
"""

from __future__ import annotations

from prometheus_client import CollectorRegistry, Histogram

REGISTRY = CollectorRegistry()

# a slice set for one backend: tens of ms for the demo, seconds for 10 k subscribers
COMPILE_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0)
COMPILE_DURATION = Histogram(
    "sliceportal_compile_duration_seconds",
    "Compiling a backend's slices into its rule IR and lowering it to the driver's native plan "
    "(previews, deploys, rollbacks' checks), by driver; this process's compiles",
    ("driver",),
    buckets=COMPILE_BUCKETS,
    registry=REGISTRY,
)
