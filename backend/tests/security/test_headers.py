"""Security headers, local API docs behind login, unknown API paths, body limits (finding 6)."""

from __future__ import annotations

from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import Role
from tests.factories import login, make_user

HEADERS = {"x-frame-options": "DENY", "x-content-type-options": "nosniff", "referrer-policy": "no-referrer"}


def _secure(r: object) -> None:
    headers = r.headers  # type: ignore[attr-defined]
    for name, value in HEADERS.items():
        assert headers.get(name) == value, (name, headers)
    csp = headers["content-security-policy"]
    assert "script-src 'self'" in csp and "frame-ancestors 'none'" in csp and "unsafe-eval" not in csp
    assert "'unsafe-inline'" not in csp.split("script-src", 1)[1].split(";", 1)[0]


def test_every_kind_of_response_carries_the_security_headers(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    for r in (
        client.get("/api/v1/health"),
        client.get("/api/v1/tenants"),
        client.get("/api/v1/tenants", headers=op),
        client.post("/api/v1/tenants", json={}, headers=op),
        client.get("/api/v1/no-such-thing"),
        client.get("/api/v1/openapi.json"),
    ):
        _secure(r)


def test_unknown_api_paths_are_404_problems_and_wrong_methods_405(client: TestClient) -> None:
    for method in ("GET", "POST", "DELETE"):
        r = client.request(method, "/api/v1/no-such-thing/42")
        assert r.status_code == 404 and r.headers["content-type"].startswith("application/problem+json")
    r = client.put("/api/v1/tenants")
    assert r.status_code == 405 and set(r.headers["allow"].split(", ")) == {"GET", "POST"}


def test_api_docs_need_a_login_and_load_only_local_assets(client: TestClient, session: Session) -> None:
    assert client.get("/api/v1/docs").status_code == 401
    make_user(session, "op", Role.OPERATOR)
    page = client.get("/api/v1/docs", headers=login(client, "op"))
    assert page.status_code == 200 and "http" not in page.text and "<script>" not in page.text
    _secure(page)
    for asset in (
        "/api/v1/docs/assets/swagger-ui-bundle.js",
        "/api/v1/docs/assets/swagger-ui.css",
        "/api/v1/docs/init.js",
    ):
        assert client.get(asset).status_code == 200, asset


def test_docs_can_be_made_public(db_url: str) -> None:
    settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, docs_public=True)
    with TestClient(create_app(settings, db_url)) as c:
        assert c.get("/api/v1/docs").status_code == 200


def test_bodies_over_the_limit_are_refused_before_they_are_read(db_url: str, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    settings = Settings(secret_key=random_secret(), reconcile_interval_s=0, max_body_bytes=4096, max_upload_bytes=8192)
    with TestClient(create_app(settings, db_url)) as c:
        op = login(c, "op")
        big = {"name": "x" * 5000, "vni": 1, "vlan": 1}
        r = c.post("/api/v1/tenants", json=big, headers=op)
        assert r.status_code == 413 and r.json()["errors"][0]["field"] == "body"
        _secure(r)

        def chunks() -> object:  # no Content-Length: counted while streaming
            for _ in range(10):
                yield b"x" * 1000

        r = c.post("/api/v1/tenants", content=chunks(), headers={**op, "content-type": "application/json"})
        assert r.status_code == 413
        # CSV uploads have their own, larger limit
        rows = "imsi,ue_ip,tenant\n" + "001010000000001,10.45.0.1,nobody\n" * 150  # ~5 KB: over the body limit
        r = c.post("/api/v1/subscribers/import", files={"file": ("s.csv", rows, "text/csv")}, headers=op)
        assert r.status_code == 422  # read and validated (unknown tenant), not refused for its size
        r = c.post("/api/v1/subscribers/import", files={"file": ("s.csv", rows * 2, "text/csv")}, headers=op)
        assert r.status_code == 413
