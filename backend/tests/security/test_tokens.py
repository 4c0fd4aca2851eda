"""Forged tokens, the per-install secret, and server-side sessions (findings 1 and 5)."""

from __future__ import annotations

import os
import stat
from datetime import UTC, datetime, timedelta
from pathlib import Path

import jwt
import pytest
from fastapi.testclient import TestClient
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings, random_secret
from sliceportal.core.secret_store import SecretFileError, load_or_create
from sliceportal.models import AuthSession, Role
from tests.factories import PASSWORD, make_user

OLD_DEFAULT_SECRET = "dev-only-secret-change-me-not-for-production"  # the first wave's published default


def _tokens(client: TestClient, username: str, password: str = PASSWORD) -> dict[str, str]:
    r = client.post("/api/v1/login/access-token", data={"username": username, "password": password})
    assert r.status_code == 200, r.text
    body: dict[str, str] = r.json()
    return body


def _bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def test_token_forged_with_the_old_default_secret_is_refused(client: TestClient, session: Session) -> None:
    op = make_user(session, "op", Role.OPERATOR)
    now = datetime.now(UTC)
    for claims in (
        {"sub": str(op.id), "role": "operator", "typ": "access", "exp": now + timedelta(days=365)},
        {"sub": str(op.id), "sid": "x" * 43, "role": "operator", "typ": "access", "exp": now + timedelta(days=365)},
    ):
        forged = jwt.encode(claims, OLD_DEFAULT_SECRET, algorithm="HS256")
        assert client.get("/api/v1/users", headers=_bearer(forged)).status_code == 401
        assert (
            client.post("/api/v1/api-keys", json={"name": "x", "scopes": ["read"]}, headers=_bearer(forged)).status_code
            == 401
        )


def test_a_token_signed_with_the_right_secret_but_no_session_is_refused(
    client: TestClient, session: Session, settings: Settings
) -> None:
    # Even knowing the secret (a leaked one, since rotated in the DB by logging out) is not enough:
    # the session named in the token must exist.
    op = make_user(session, "op", Role.OPERATOR)
    assert settings.secret_key is not None
    claims = {
        "sub": str(op.id),
        "sid": "no-such-session",
        "typ": "access",
        "exp": datetime.now(UTC) + timedelta(minutes=5),
    }
    r = client.get("/api/v1/users/me", headers=_bearer(jwt.encode(claims, settings.secret_key, algorithm="HS256")))
    assert r.status_code == 401 and "session" in r.json()["detail"]


def test_the_published_default_and_short_secrets_are_refused() -> None:
    with pytest.raises(ValidationError, match="published default"):
        Settings(secret_key=OLD_DEFAULT_SECRET)
    with pytest.raises(ValidationError, match="at least 32"):
        Settings(secret_key="short")


def test_per_install_secret_is_random_private_and_stable(tmp_path: Path) -> None:
    first = load_or_create(tmp_path / "a" / "secret_key")
    assert len(first) >= 32 and first != OLD_DEFAULT_SECRET
    assert stat.S_IMODE((tmp_path / "a" / "secret_key").stat().st_mode) == 0o600
    assert load_or_create(tmp_path / "a" / "secret_key") == first  # survives a restart
    assert load_or_create(tmp_path / "b" / "secret_key") != first  # per install
    os.chmod(tmp_path / "a" / "secret_key", 0o644)
    with pytest.raises(SecretFileError, match="chmod 600"):
        load_or_create(tmp_path / "a" / "secret_key")


def test_without_secret_key_the_app_signs_with_the_install_secret(
    db_url: str, session: Session, tmp_path: Path
) -> None:
    make_user(session, "op", Role.OPERATOR)
    settings = Settings(data_dir=tmp_path, reconcile_interval_s=0)
    with TestClient(create_app(settings, db_url)) as c:
        access = _tokens(c, "op")["access_token"]
        assert c.get("/api/v1/users/me", headers=_bearer(access)).status_code == 200
    secret = (tmp_path / "secret_key").read_text().strip()
    assert jwt.decode(access, secret, algorithms=["HS256"])["sub"]
    # SECRET_KEY wins over the file: tokens of the file's secret no longer verify
    other = Settings(data_dir=tmp_path, secret_key=random_secret(), reconcile_interval_s=0)
    with TestClient(create_app(other, db_url)) as c:
        assert c.get("/api/v1/users/me", headers=_bearer(access)).status_code == 401


def test_logout_ends_access_and_refresh_tokens_at_once(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    t = _tokens(client, "op")
    assert client.get("/api/v1/users/me", headers=_bearer(t["access_token"])).status_code == 200
    assert client.post("/api/v1/login/logout", json={"refresh_token": t["refresh_token"]}).status_code == 204
    assert client.get("/api/v1/users/me", headers=_bearer(t["access_token"])).status_code == 401
    assert client.post("/api/v1/login/refresh", json={"refresh_token": t["refresh_token"]}).status_code == 401


def test_password_change_by_an_operator_ends_the_users_sessions(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    b = make_user(session, "bob", Role.INTEGRATOR)
    op, bob = _tokens(client, "op"), _tokens(client, "bob")
    r = client.patch(
        f"/api/v1/users/{b.id}",
        json={"password": "a new long passphrase 42", "version": 1},
        headers=_bearer(op["access_token"]),
    )
    assert r.status_code == 200, r.text
    assert client.get("/api/v1/users/me", headers=_bearer(bob["access_token"])).status_code == 401
    assert client.post("/api/v1/login/refresh", json={"refresh_token": bob["refresh_token"]}).status_code == 401
    # the operator's own session is untouched, and bob logs in with the new password
    assert client.get("/api/v1/users/me", headers=_bearer(op["access_token"])).status_code == 200
    assert _tokens(client, "bob", "a new long passphrase 42")["access_token"]


def test_disabling_a_user_ends_its_sessions(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    b = make_user(session, "bob", Role.INTEGRATOR)
    op, bob = _tokens(client, "op"), _tokens(client, "bob")
    assert (
        client.patch(
            f"/api/v1/users/{b.id}", json={"is_active": False, "version": 1}, headers=_bearer(op["access_token"])
        ).status_code
        == 200
    )
    assert client.get("/api/v1/users/me", headers=_bearer(bob["access_token"])).status_code == 401
    reasons = set(session.scalars(select(AuthSession.revoked_reason).where(AuthSession.user_id == b.id)))
    assert reasons == {"user-disabled"}


def test_refresh_token_reuse_revokes_the_whole_chain(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    first = _tokens(client, "op")
    second = client.post("/api/v1/login/refresh", json={"refresh_token": first["refresh_token"]}).json()
    assert client.get("/api/v1/users/me", headers=_bearer(second["access_token"])).status_code == 200
    # an attacker replays the spent token: refused, and the legitimate chain ends with it
    assert client.post("/api/v1/login/refresh", json={"refresh_token": first["refresh_token"]}).status_code == 401
    assert client.get("/api/v1/users/me", headers=_bearer(second["access_token"])).status_code == 401
    assert client.post("/api/v1/login/refresh", json={"refresh_token": second["refresh_token"]}).status_code == 401


def test_browser_refresh_cookie_is_httponly_strict_and_scoped(client: TestClient, session: Session) -> None:
    make_user(session, "op", Role.OPERATOR)
    r = client.post("/api/v1/login/access-token", data={"username": "op", "password": PASSWORD})
    cookie = r.headers["set-cookie"]
    assert "sp_refresh=" in cookie and "HttpOnly" in cookie and "SameSite=strict" in cookie
    assert "Path=/api/v1/login" in cookie
    # the browser refreshes with the cookie alone; the answer holds no refresh token a script could read
    fresh = client.post("/api/v1/login/refresh")
    assert fresh.status_code == 200 and fresh.json()["refresh_token"] is None
    access = fresh.json()["access_token"]
    assert client.get("/api/v1/users/me", headers=_bearer(access)).json()["username"] == "op"
    # logout with the cookie ends the session and clears the cookie
    assert client.post("/api/v1/login/logout").status_code == 204
    assert client.get("/api/v1/users/me", headers=_bearer(access)).status_code == 401
    assert client.post("/api/v1/login/refresh").status_code == 401
