"""Atomic lock-out per (user, client address), exponential backoff, trusted proxies (finding 4)."""

from __future__ import annotations

from collections import Counter
from concurrent.futures import ThreadPoolExecutor

from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.models import AuditLog, LoginAttempt, LoginThrottle, Role
from tests.factories import PASSWORD, make_user

LOGIN = "/api/v1/login/access-token"


def _try(
    client: TestClient, password: str, headers: dict[str, str] | None = None, username: str = "op"
) -> tuple[int, str | None]:
    r = client.post(LOGIN, data={"username": username, "password": password}, headers=headers or {})
    return r.status_code, r.headers.get("retry-after")


def test_twenty_parallel_wrong_passwords_count_exactly_five(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    with ThreadPoolExecutor(20) as pool:
        results = list(pool.map(lambda _: _try(client, "wrong password!"), range(20)))
    assert Counter(status for status, _ in results) == {401: 5, 429: 15}
    assert all(int(after or 0) >= 1 for status, after in results if status == 429)
    failures = session.scalar(select(func.count()).select_from(LoginAttempt).where(LoginAttempt.ok.is_(False)))
    assert failures == 5
    assert session.scalar(select(LoginThrottle.failures)) == 5
    # even the right password waits out the lock, and the lock-out is audited
    status, after = _try(client, PASSWORD)
    assert status == 429 and after is not None and 1 <= int(after) <= 60
    assert session.scalar(select(func.count()).select_from(AuditLog).where(AuditLog.action == "login_locked")) == 1


def test_lockout_is_per_address_and_case_insensitive(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    for name in ("op", "OP", "Op", "oP", "op"):
        assert _try(client, "wrong password!", username=name)[0] == 401
    assert _try(client, PASSWORD, username="OP")[0] == 429
    # X-Forwarded-For from an untrusted peer is ignored: it does not escape the lock
    assert _try(client, PASSWORD, headers={"X-Forwarded-For": "203.0.113.9"})[0] == 429


def test_trusted_proxy_separates_clients_so_nobody_locks_the_operator_out(db_url: str, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    # the portal behind a reverse proxy on 127.0.0.1: the proxy's X-Forwarded-For names the client
    settings = Settings(
        secret_key=random_secret(), login_max_failures=5, reconcile_interval_s=0, trusted_proxies=["127.0.0.1/32"]
    )
    with TestClient(create_app(settings, db_url), client=("127.0.0.1", 50000)) as c:
        attacker = {"X-Forwarded-For": "198.51.100.7"}
        for _ in range(5):
            assert _try(c, "wrong password!", attacker)[0] == 401
        assert _try(c, PASSWORD, attacker)[0] == 429
        assert _try(c, PASSWORD, {"X-Forwarded-For": "192.0.2.10"})[0] == 200


def test_backoff_doubles_with_each_consecutive_lockout(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    for _ in range(5):
        _try(client, "wrong password!")
    first = int(_try(client, "wrong password!")[1] or 0)
    # let the lock run out (move it into the past), then fail five more times
    session.execute(LoginThrottle.__table__.update().values(locked_until=func.now()))
    session.commit()
    for _ in range(5):
        assert _try(client, "wrong password!")[0] == 401
    second = int(_try(client, "wrong password!")[1] or 0)
    assert 55 <= first <= 60 and 115 <= second <= 120
    # a correct login after the lock clears everything
    session.execute(LoginThrottle.__table__.update().values(locked_until=func.now()))
    session.commit()
    assert _try(client, PASSWORD)[0] == 200
    assert session.scalar(select(func.count()).select_from(LoginThrottle)) == 0
