"""#27, the API surface: bounded options, malformed paths, a minimal public health, CORS."""

from __future__ import annotations

import itertools
import os
import socket
from typing import Any

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
from sliceportal.models import Backend, Role
from tests.factories import login, make_user

_names = itertools.count()
P4 = {"address": "127.0.0.1:9559"}
NF = {"address": "tcp:127.0.0.1:1"}
XDP_AGENT = {"address": "tcp:127.0.0.1:1", "agent_token": "x" * 16}


BOUNDS_CASES: list[tuple[str, dict[str, Any], str]] = [
    ("p4rt", {**P4, "device_id": 2**200}, "options.device_id"),
    ("p4rt", {**P4, "timeout_s": 1e12}, "options.timeout_s"),
    ("p4rt", {**P4, "timeout_s": 0}, "options.timeout_s"),
    ("p4rt", {**P4, "batch_size": 2**70}, "options.batch_size"),
    ("p4rt", {**P4, "election_id": 2**130}, "options.election_id"),
    ("p4rt", {**P4, "uplink_port": 2**40}, "options.uplink_port"),
    ("p4rt", {**P4, "trunk_ports": [1, 2**40]}, "options.trunk_ports.1"),
    ("p4rt", {**P4, "access_ports": {"1": 2**40}}, "options.access_ports.1"),
    ("netfpga", {**NF, "timeout_s": 1e12}, "options.timeout_s"),
    ("xdp", {**XDP_AGENT, "agent_timeout_s": 1e12}, "options.agent_timeout_s"),
    ("xdp", {**XDP_AGENT, "overload_poll_s": 1e12}, "options.overload_poll_s"),
    ("xdp", {**XDP_AGENT, "lane_cpus": {"0": 2**40}}, "options.lane_cpus.0"),
    ("xdp", {**XDP_AGENT, "lane_capacity_pps": {"1": 2**70}}, "options.lane_capacity_pps.1"),
    ("xdp", {**XDP_AGENT, "alt_lanes": [2**40]}, "options.alt_lanes"),
]


def test_every_numeric_option_is_bounded(client: TestClient, session: Session, op: dict[str, str]) -> None:
    # one app and login for all cases (each would otherwise pay the fixtures' seconds)
    for driver, options, field in BOUNDS_CASES:
        r = client.post(
            "/api/v1/backends", json={"name": f"b{next(_names)}", "driver": driver, "options": options}, headers=op
        )
        assert r.status_code == 422, (options, r.text)
        fields = [e["field"] for e in r.json()["errors"]]
        assert any(f.startswith(field) for f in fields), (fields, r.text)
    assert session.scalar(select(func.count()).select_from(Backend)) == 0


def test_public_health_says_up_or_not_and_operators_see_the_detail(
    client: TestClient, session: Session, op: dict[str, str]
) -> None:
    r = client.get("/api/v1/health")
    assert r.status_code == 200 and set(r.json()) == {"status", "database"}, r.text
    for secret in (socket.gethostname(), f'"pid":{os.getpid()}', "loops", "controller", "version"):
        assert secret not in r.text
    detail = client.get("/api/v1/health/detail", headers=op)
    assert detail.status_code == 200 and {"controller", "loops", "version"} <= set(detail.json())
    assert client.get("/api/v1/health/detail").status_code == 401
    viewer = make_user(
        session,
        "viewer",
        Role.TENANT,
        tenant_id=client.post("/api/v1/tenants", json={"name": "t", "vni": 9}, headers=op).json()["id"],
    )
    assert client.get("/api/v1/health/detail", headers=login(client, viewer.username)).status_code == 403


MALFORMED = [
    "/index.html%00.png",
    "/assets/x%00.js",
    "/api/v1/tenants%00",
    "/%0a",
    "/a%7f",
    "/" + "a" * 5000,
    "/%ff%fe.png",
    "/assets/" + "b" * 5000 + ".js",
]


def test_malformed_paths_are_4xx(client: TestClient) -> None:
    for path in MALFORMED:
        r = client.get(path)
        assert r.status_code < 500, (path, r.status_code, r.text[:200])
        if "%00" in path or "%0a" in path or "%7f" in path:
            assert r.status_code == 400 and r.headers["content-type"] == "application/problem+json"
            assert r.json()["errors"][0]["field"] == "path" and "\x00" not in r.json()["instance"]


def test_cors_allows_exactly_the_listed_origins(db_url: str, settings: Settings) -> None:
    allowed = "https://ops.example.net"
    with TestClient(create_app(settings.model_copy(update={"cors_origins": [allowed]}), db_url)) as c:
        pre = {"Access-Control-Request-Method": "POST", "Access-Control-Request-Headers": "authorization,content-type"}
        r = c.options("/api/v1/tenants", headers={"Origin": allowed, **pre})
        assert r.status_code == 200 and r.headers["access-control-allow-origin"] == allowed
        assert "access-control-allow-credentials" not in r.headers
        r = c.get("/api/v1/health", headers={"Origin": allowed})
        assert r.headers["access-control-allow-origin"] == allowed
        for origin in ("https://evil.example", "https://ops.example.net.evil.example", "null"):
            r = c.options("/api/v1/tenants", headers={"Origin": origin, **pre})
            assert "access-control-allow-origin" not in r.headers
            assert "access-control-allow-origin" not in c.get("/api/v1/health", headers={"Origin": origin}).headers
    # none listed: no CORS header at all
    with TestClient(create_app(settings, db_url)) as c:
        assert "access-control-allow-origin" not in c.get("/api/v1/health", headers={"Origin": allowed}).headers
    for bad in ("*", "https://ops.example.net/path", "ops.example.net"):
        with pytest.raises(ValueError, match="CORS_ORIGINS"):
            create_app(settings.model_copy(update={"cors_origins": [bad]}), db_url)
