"""Log in (password → short-lived access token + refresh token), refresh, log out."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.security import OAuth2PasswordRequestForm
from sqlalchemy import func, select, update

from sliceportal.api.deps import SessionDep, SettingsDep
from sliceportal.api.errors import ApiError
from sliceportal.core.security import (
    DUMMY_HASH,
    create_access_token,
    new_refresh_token,
    sha256,
    verify_password,
)
from sliceportal.models import LoginAttempt, RefreshToken, User
from sliceportal.models.audit import Actor, record, set_actor
from sliceportal.schemas.auth import RefreshRequest, Token

router = APIRouter(prefix="/login", tags=["login"])


def _issue(session: SessionDep, settings: SettingsDep, user: User) -> Token:
    refresh = new_refresh_token()
    session.add(RefreshToken(user_id=user.id, token_hash=sha256(refresh),
                             expires_at=datetime.now(UTC) + timedelta(days=settings.refresh_token_days)))
    access = create_access_token(user.id, user.role, settings.secret_key, settings.access_token_minutes)
    return Token(access_token=access, refresh_token=refresh, expires_in=settings.access_token_minutes * 60)


@router.post("/access-token", response_model=Token)
def login(request: Request, session: SessionDep, settings: SettingsDep,
          form: Annotated[OAuth2PasswordRequestForm, Depends()]) -> Token:
    address = request.client.host if request.client else "unknown"
    since = datetime.now(UTC) - timedelta(seconds=settings.login_window_seconds)
    failures = session.scalar(select(func.count()).select_from(LoginAttempt).where(
        LoginAttempt.username == form.username, LoginAttempt.ok.is_(False), LoginAttempt.ts >= since)) or 0
    if failures >= settings.login_max_failures:
        raise ApiError(429, "Too many failed logins",
                       f"wait {settings.login_window_seconds // 60} minutes before trying again",
                       headers={"Retry-After": str(settings.login_window_seconds)})
    user = session.scalar(select(User).where(User.username == form.username))
    ok = verify_password(form.password, user.password_hash if user else DUMMY_HASH) and bool(user and user.is_active)
    session.add(LoginAttempt(username=form.username, address=address, ts=datetime.now(UTC), ok=ok))
    if not ok or user is None:
        session.commit()
        raise ApiError(401, "Login failed", "wrong username or password",
                       headers={"WWW-Authenticate": "Bearer"})
    set_actor(session, Actor(user.id, user.username, "login"))
    record(session, "login", "user_account", user.id, tenant_id=user.tenant_id)
    token = _issue(session, settings, user)
    session.commit()
    return token


@router.post("/refresh", response_model=Token)
def refresh(body: RefreshRequest, session: SessionDep, settings: SettingsDep) -> Token:
    stored = session.scalar(select(RefreshToken).where(RefreshToken.token_hash == sha256(body.refresh_token)))
    if stored is None or stored.revoked or stored.expires_at < datetime.now(UTC):
        raise ApiError(401, "Not authenticated", "refresh token invalid, expired or already used",
                       field="refresh_token")
    user = session.get(User, stored.user_id)
    if user is None or not user.is_active:
        raise ApiError(401, "Not authenticated", "user disabled or removed")
    stored.revoked = True  # rotation: each refresh token works once
    token = _issue(session, settings, user)
    session.commit()
    return token


@router.post("/logout", status_code=204)
def logout(body: RefreshRequest, session: SessionDep) -> None:
    session.execute(update(RefreshToken).where(RefreshToken.token_hash == sha256(body.refresh_token))
                    .values(revoked=True))
    session.commit()
