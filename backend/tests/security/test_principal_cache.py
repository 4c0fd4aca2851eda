"""Credentials remembered by an API process (api/principals.py) end as they did when every
request looked them up: at the commit in the process that changed them, within a NOTIFY's
delivery in any other (here: raw SQL on a connection of its own, as psql or another worker),
and at once whenever the process does not hear the channel."""

from __future__ import annotations

import time

import psycopg
from fastapi.testclient import TestClient
from sqlalchemy import select, text, update
from sqlalchemy.orm import Session

from sliceportal.api.deps import Principal
from sliceportal.api.principals import AUTH_TABLES, PrincipalCache
from sliceportal.core.listen import libpq_url
from sliceportal.models import AuthSession, Role, Scope, User
from tests.api.test_query_counts import statements
from tests.factories import login, make_user, wait_until

READ = "/api/v1/slice-types"
NOTICE_S = 5.0  # a NOTIFY reaches the listener in milliseconds; a loaded CI machine gets slack


def auth_lookups(seen: list[str]) -> list[str]:
    """The statements that read a request's login session or key."""
    return [x for x in seen if "FROM user_account JOIN auth_session" in x or "FROM api_key" in x]


def another_process(db_url: str, statement: str) -> None:
    """``statement`` committed outside this process's SQLAlchemy sessions (no commit hook sees it)."""
    with psycopg.connect(libpq_url(db_url), autocommit=True) as conn:
        conn.execute(statement)  # type: ignore[arg-type]


def test_a_token_checked_once_is_not_looked_up_again(client: TestClient, session: Session, db_url: str) -> None:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    with statements(db_url) as seen:
        for _ in range(3):
            assert client.get(READ, headers=op).status_code == 200
    assert len(auth_lookups(seen)) == 1, seen


def test_another_process_ending_the_session_ends_the_token(client: TestClient, session: Session, db_url: str) -> None:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    assert client.get(READ, headers=op).status_code == 200  # remembered now
    another_process(db_url, "UPDATE auth_session SET revoked_at = now()")
    wait_until("the revoked session refused", lambda: client.get(READ, headers=op).status_code == 401, NOTICE_S, 0.02)
    assert client.app.state.auth_listener.notices >= 1  # type: ignore[attr-defined]


def test_another_process_disabling_the_user_ends_its_token_and_key(
    client: TestClient, session: Session, db_url: str
) -> None:
    make_user(session, "integ", Role.INTEGRATOR)
    h = login(client, "integ")
    key = client.post("/api/v1/api-keys", json={"name": "k", "scopes": ["read"]}, headers=h).json()["secret"]
    for headers in (h, {"X-API-Key": key}):
        assert client.get(READ, headers=headers).status_code == 200
    another_process(db_url, "UPDATE user_account SET is_active = false WHERE username = 'integ'")
    for headers in (h, {"X-API-Key": key}):
        wait_until(
            "the disabled user refused", lambda hs=headers: client.get(READ, headers=hs).status_code == 401, NOTICE_S
        )


def test_without_the_channel_every_request_is_looked_up(client: TestClient, session: Session, db_url: str) -> None:
    make_user(session, "op", Role.OPERATOR)
    op = login(client, "op")
    assert client.get(READ, headers=op).status_code == 200
    client.app.state.auth_listener.stop()  # type: ignore[attr-defined]
    with statements(db_url) as seen:
        assert client.get(READ, headers=op).status_code == 200
        another_process(db_url, "UPDATE auth_session SET revoked_at = now()")
        assert client.get(READ, headers=op).status_code == 401  # at once: nothing remembered
    assert len(auth_lookups(seen)) == 2


def _cache_with_one_entry() -> tuple[PrincipalCache, str]:
    cache = PrincipalCache()
    cache.listening.set()  # as its listener does while it LISTENs
    p = Principal(1, "op", Role.OPERATOR, None, frozenset({Scope.READ}), "token")
    cache.put("k", p, time.time() + 60, cache.generation)
    assert cache.get("k") == p
    return cache, "k"


def test_a_commit_that_changes_who_may_log_in_clears_the_cache_before_it_returns(session: Session, db_url: str) -> None:
    user = make_user(session, "op", Role.OPERATOR)
    cache, key = _cache_with_one_entry()
    # a new row changes nothing remembered; a rolled-back change did not happen
    session.add(User(username="other", password_hash="x", role=Role.TENANT))
    session.commit()
    session.execute(update(AuthSession).values(revoked_reason="x"))
    session.rollback()
    session.execute(text("SELECT 1"))
    session.commit()
    assert cache.get(key) is not None
    # a bulk statement, then an ORM object's change: each clears at its commit
    session.execute(update(AuthSession).where(AuthSession.user_id == user.id).values(revoked_reason="logout"))
    session.commit()
    assert cache.get(key) is None
    cache, key = _cache_with_one_entry()
    u = session.scalar(select(User).where(User.username == "op"))
    assert u is not None
    u.is_active = False
    session.commit()
    assert cache.get(key) is None


def test_a_lookup_that_began_before_a_change_is_not_remembered() -> None:
    cache = PrincipalCache()
    cache.listening.set()
    p = Principal(1, "op", Role.OPERATOR, None, frozenset({Scope.READ}), "token")
    began = cache.generation
    cache.clear()  # a change noticed while the lookup ran
    cache.put("k", p, time.time() + 60, began)
    assert cache.get("k") is None
    cache.put("k", p, time.time() - 1, cache.generation)  # expired already: never answered
    assert cache.get("k") is None
    cache.listening.clear()
    cache.put("k", p, time.time() + 60, cache.generation)
    assert cache.get("k") is None


def test_every_table_the_check_reads_notifies_its_changes(session: Session) -> None:
    found = set(
        session.scalars(
            text(
                "SELECT c.relname FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid "
                "WHERE t.tgname = c.relname || '_auth_changed' AND NOT t.tgisinternal"
            )
        )
    )
    assert found == AUTH_TABLES
