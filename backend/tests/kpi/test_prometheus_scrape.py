"""docker-compose's observability, run here with the real Prometheus (installed by bootstrap):
the shipped deploy/prometheus/prometheus.yml passes ``promtool check config``; Prometheus,
configured as that file says (same job, path, scheme, bearer API key) but pointed at a portal
process of this test instead of the compose service's DNS name, scrapes /metrics; and every
query of the provisioned Grafana dashboard answers with the slices' series. Docker itself is not
available on these machines; Grafana is not packaged for Debian, so its dashboard is checked
through the queries it sends."""

from __future__ import annotations

import json
import shutil
import subprocess
from collections.abc import Iterator
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx
import pytest
import yaml
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.api.routes.metrics import GAUGES
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest
from sliceportal_testbed.processes import free_port
from tests.factories import login, serving, wait_until

ROOT = Path(__file__).resolve().parents[3]
DEPLOY = ROOT / "deploy"
DASHBOARD = DEPLOY / "grafana" / "dashboards" / "sliceportal.json"


def tool(name: str) -> str:
    path = shutil.which(name)
    if path is None:
        pytest.fail(f"{name} is missing: scripts/bootstrap.sh installs it (apt package prometheus)")
    return path


def shipped_config(api_key_file: Path) -> dict[str, Any]:
    """deploy/prometheus/prometheus.yml with only the key file's path moved to this test's."""
    config: dict[str, Any] = yaml.safe_load((DEPLOY / "prometheus" / "prometheus.yml").read_text())
    (job,) = config["scrape_configs"]
    job["authorization"]["credentials_file"] = str(api_key_file)
    return config


def test_the_shipped_prometheus_config_is_valid(tmp_path: Path) -> None:
    key = tmp_path / "api-key"
    key.write_text("spk_placeholder\n")
    config = tmp_path / "prometheus.yml"
    config.write_text(yaml.safe_dump(shipped_config(key)))
    check = subprocess.run([tool("promtool"), "check", "config", str(config)], capture_output=True, text=True)
    assert check.returncode == 0, check.stdout + check.stderr


@pytest.fixture
def prometheus(tmp_path: Path, client: TestClient, tenants: dict[str, int], worker_a: str) -> Iterator[str]:
    """Prometheus scraping worker A every second with an operator's read-scoped API key."""
    op = login(client, "op")
    created = client.post("/api/v1/api-keys", json={"name": "prometheus", "scopes": ["read"]}, headers=op)
    assert created.status_code == 201, created.text
    key = tmp_path / "api-key"
    key.write_text(created.json()["secret"] + "\n")
    config = shipped_config(key)
    config["global"]["scrape_interval"] = "1s"
    (job,) = config["scrape_configs"]
    # the one substitution: compose finds the replicas by the service's DNS name
    job.pop("dns_sd_configs")
    job["static_configs"] = [{"targets": [worker_a.removeprefix("http://")]}]
    (tmp_path / "prometheus.yml").write_text(yaml.safe_dump(config))
    base = f"http://127.0.0.1:{free_port()}"
    argv = [
        tool("prometheus"),
        f"--config.file={tmp_path / 'prometheus.yml'}",
        f"--storage.tsdb.path={tmp_path / 'tsdb'}",
        f"--web.listen-address={base.removeprefix('http://')}",
        "--log.level=warn",
    ]
    with serving("prometheus", argv, f"{base}/-/ready"):
        yield base


def query(base: str, expr: str) -> list[dict[str, Any]]:
    r = httpx.get(f"{base}/api/v1/query", params={"query": expr}, timeout=10)
    body = r.json()
    assert r.status_code == 200 and body["status"] == "success", f"{expr}: {body}"
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


def dashboard_queries() -> list[str]:
    dashboard = json.loads(DASHBOARD.read_text())
    return [t["expr"] for p in dashboard["panels"] for t in p["targets"]]


def test_prometheus_scrapes_the_portal_and_every_dashboard_query_answers(
    session: Session, tenants: dict[str, int], prometheus: str
) -> None:
    now = datetime.now(UTC)
    ingest(
        session,
        [
            KpiPoint(
                slice_id=tenants[n],
                backend_id=tenants["backend"],
                lane=lane,
                source="testbed",
                ts=now,
                tx_packets=1000,
                rx_packets=990,
                throughput_bps=8e6,
                loss_pct=1.0,
                delay_p99_ms=2.5,
                delay_p50_ms=1.5,
                delay_mean_ms=1.0,
                jitter_ms=0.1,
                ecn_marks=3,
            )
            for n in ("red", "blue")
            for lane in (0, 1)
        ],
    )
    wait_until(
        "Prometheus holds the slices' throughput",
        lambda: len(query(prometheus, "sliceportal_lane_throughput_bytes_per_second")) == 4,
        timeout_s=60,
    )

    up = query(prometheus, 'up{job="sliceportal"}')
    assert [s["value"][1] for s in up] == ["1"], "the scrape with the API key failed"
    series = query(prometheus, 'sliceportal_lane_delay_p99_seconds{slice="red-s", lane="1"}')
    assert [(s["metric"]["tenant"], s["metric"]["backend"], s["metric"]["source"], s["value"][1]) for s in series] == [
        ("red", "xdp-a", "testbed", "0.0025")
    ]
    # counters: what this API process received since it started, in base units
    sent = query(prometheus, 'sliceportal_lane_sent_packets_total{slice="red-s", lane="1"}')
    assert [s["value"][1] for s in sent] == ["1000"]

    # Grafana sends each panel's query with the template variables expanded; "All" is .*
    exprs = dashboard_queries()
    for expr in exprs:
        expanded = expr.replace("$tenant", ".*").replace("$slice", ".*").replace("$backend", ".*")
        if "sla_violations_open" in expr:
            query(prometheus, expanded)  # valid; empty while no violation is open
            continue
        # a rate() answers once two scrapes of its counter are in the window
        wait_until(f"dashboard query {expanded} answers", lambda e=expanded: query(prometheus, e), timeout_s=15)  # type: ignore[misc]
    shown = {name for name in GAUGES if any(name in e for e in exprs)}
    assert shown == set(GAUGES), f"KPIs the portal exports but the dashboard does not show: {set(GAUGES) - shown}"

    dashboard = json.loads(DASHBOARD.read_text())
    for var in dashboard["templating"]["list"]:
        metric = var["definition"].removeprefix("label_values(").split(",")[0]
        values = httpx.get(
            f"{prometheus}/api/v1/label/{var['name']}/values", params={"match[]": metric}, timeout=10
        ).json()["data"]
        assert values, f"dashboard variable {var['name']} would list nothing"
