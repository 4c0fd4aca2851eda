"""The proxy edge (issue #27): X-Forwarded-For / -Proto count only from TRUSTED_PROXIES, in the
ASGI server the run command starts as much as in the app. Served by real uvicorn with the
options the run command passes it (cli.proxy_header_options): uvicorn's own default believes
any client on 127.0.0.1."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager

import httpx
import uvicorn
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.cli import proxy_header_args, proxy_header_options
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import AuditLog, LoginAttempt, Role
from sliceportal_testbed.processes import free_port
from tests.factories import PASSWORD, make_user

LOGIN = "/api/v1/login/access-token"


@contextmanager
def served(settings: Settings, db_url: str) -> Iterator[str]:
    port = free_port()
    config = uvicorn.Config(
        create_app(settings, db_url), host="127.0.0.1", port=port, log_level="warning", **proxy_header_options(settings)
    )
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    deadline = time.monotonic() + 30
    while not server.started:
        assert thread.is_alive() and time.monotonic() < deadline, "uvicorn did not start"
        time.sleep(0.02)
    try:
        yield f"http://127.0.0.1:{port}"
    finally:
        server.should_exit = True
        thread.join(30)


def _login(base: str, password: str, forwarded_for: str) -> int:
    r = httpx.post(
        base + LOGIN,
        data={"username": "op", "password": password},
        timeout=30,
        headers={"X-Forwarded-For": forwarded_for, "X-Forwarded-Proto": "https"},
    )
    return r.status_code


def test_rotating_forged_addresses_do_not_escape_the_lockout(db_url: str, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    settings = Settings(secret_key=random_secret(), login_max_failures=5, reconcile_interval_s=0)
    assert not settings.trusted_proxies
    with served(settings, db_url) as base:
        codes = [_login(base, "wrong password!", f"203.0.113.{i}") for i in range(12)]
        assert Counter(codes) == {401: 5, 429: 7}, codes
        # the operator on another (forged) address is locked out too: there is one client here
        assert _login(base, PASSWORD, "192.0.2.1") == 429
    attempts = set(session.scalars(select(LoginAttempt.address)))
    assert attempts == {"127.0.0.1"}
    audited = [
        a.after["address"]
        for a in session.scalars(select(AuditLog).where(AuditLog.action == "login_locked"))
        if a.after
    ]
    assert audited and set(audited) == {"127.0.0.1"}


def test_a_trusted_proxy_names_its_clients(db_url: str, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    settings = Settings(
        secret_key=random_secret(), login_max_failures=5, reconcile_interval_s=0, trusted_proxies=["127.0.0.1/32"]
    )
    with served(settings, db_url) as base:
        assert [_login(base, "wrong password!", "198.51.100.7") for _ in range(6)] == [401] * 5 + [429]
        assert _login(base, PASSWORD, "192.0.2.10") == 200
    assert set(session.scalars(select(LoginAttempt.address))) == {"198.51.100.7", "192.0.2.10"}


def test_the_run_command_passes_uvicorn_the_same_choice() -> None:
    assert proxy_header_args(Settings()) == ["--no-proxy-headers"]
    trusting = Settings(trusted_proxies=["10.0.0.0/8", "::1/128"])
    assert proxy_header_args(trusting) == ["--proxy-headers", "--forwarded-allow-ips", "10.0.0.0/8,::1/128"]
