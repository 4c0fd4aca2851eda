"""Property-based API test: schemathesis drives every operation of our own OpenAPI against
the live app (uvicorn on a free port, real PostgreSQL) with an operator's credentials.

Whatever it generates — valid or not — the API must answer without a 5xx, and every answer
must agree with the document: a documented status code, the documented content type, and
(for a method a path lacks) a 405 whose Allow header lists the path's methods. The run is
bounded by examples per operation (about a minute here). One test walks all operations:
schemathesis' pytest fixture integration does not run on pytest 9.
"""

from __future__ import annotations

import re
import threading
import time
from collections.abc import Iterator

import httpx
import pytest
import schemathesis
import uvicorn
from hypothesis import HealthCheck, given, settings
from schemathesis.checks import not_a_server_error
from schemathesis.specs.openapi.checks import content_type_conformance, status_code_conformance
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import Role
from sliceportal_testbed.processes import free_port
from tests.factories import PASSWORD, make_user, slice_type_id, tenant_body

# login is rate-limited by design: a flood of failed attempts answers 429, which is right
# but starves the other operations of useful examples; logout would end the fuzzer's session.
SKIP = {("POST", "/api/v1/login/access-token"), ("POST", "/api/v1/login/logout")}
CHECKS = [not_a_server_error, status_code_conformance, content_type_conformance]
EXAMPLES = 5


@pytest.fixture
def live_url(db_url: str) -> Iterator[str]:
    # the expensive endpoints' per-user budget would otherwise turn most examples into 429s
    app_settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, rate_limit_expensive="100000/minute")
    port = free_port()
    server = uvicorn.Server(
        uvicorn.Config(
            create_app(app_settings, db_url), host="127.0.0.1", port=port, log_level="warning", lifespan="on"
        )
    )
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        if time.monotonic() > deadline or not thread.is_alive():
            pytest.fail("uvicorn did not start")
        time.sleep(0.05)
    yield f"http://127.0.0.1:{port}"
    server.should_exit = True
    thread.join(10)


def test_no_server_errors_and_no_answer_contradicts_the_openapi(live_url: str, session: Session) -> None:
    make_user(session, "fuzzer", Role.OPERATOR)
    with httpx.Client(base_url=live_url, timeout=30) as http:
        r = http.post("/api/v1/login/access-token", data={"username": "fuzzer", "password": PASSWORD})
        headers = {"Authorization": f"Bearer {r.json()['access_token']}"}
        t = http.post("/api/v1/tenants", json=tenant_body(), headers=headers).json()["id"]
        st = slice_type_id(http, headers, "Flexible Slice")  # type: ignore[arg-type]
        http.post(
            "/api/v1/slices",
            json={"name": "s", "tenant_id": t, "slice_type_id": st, "services": [{"name": "be", "lane": 0}]},
            headers=headers,
        )
        http.post(
            "/api/v1/subscribers",
            json={"tenant_id": t, "imsi": "001010000000001", "ue_ip": "10.45.0.1"},
            headers=headers,
        )
    schema = schemathesis.openapi.from_url(f"{live_url}/api/v1/openapi.json")
    operations = [r.ok() for r in schema.get_all_operations()]
    assert len(operations) > 20
    for op in operations:
        if (op.method.upper(), op.path) in SKIP:
            continue

        @given(case=op.as_strategy())
        @settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        def run(case: schemathesis.Case) -> None:
            case.call_and_validate(base_url=live_url, headers=headers, checks=CHECKS)

        run()
    # a method a path lacks: 405 with exactly the path's documented methods in Allow
    paths = httpx.get(f"{live_url}/api/v1/openapi.json").json()["paths"]
    with httpx.Client(base_url=live_url, timeout=30, headers=headers) as http:
        for path, ops in paths.items():
            documented = {m.upper() for m in ops}
            lacking = next(m for m in ("PUT", "PATCH", "DELETE", "POST", "GET") if m not in documented)
            r = http.request(lacking, re.sub(r"\{[^}]+\}", "1", path))
            assert r.status_code == 405, (lacking, path, r.status_code)
            assert set(r.headers["allow"].split(", ")) == documented, (path, r.headers["allow"])
