"""Log in (password → short-lived access token + refresh token), refresh, log out.

Every login opens a server-side session (``api/auth_sessions.py``) that its tokens name;
failed logins are throttled per (user, client address) (``api/lockout.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Depends, Request
from fastapi.security import OAuth2PasswordRequestForm
from sqlalchemy import func, select

from sliceportal.api import auth_sessions, lockout
from sliceportal.api.deps import SecretDep, SessionDep, SettingsDep, client_address
from sliceportal.api.errors import ApiError
from sliceportal.core.security import DUMMY_HASH, verify_password
from sliceportal.models import LoginAttempt, User
from sliceportal.models.audit import Actor, record, set_actor
from sliceportal.schemas.auth import RefreshRequest, Token

router = APIRouter(prefix="/login", tags=["login"])

LOGIN_RESPONSES: dict[int | str, dict[str, str]] = {
    401: {"description": "wrong user name or password"},
    429: {"description": "too many failed logins from this address for this user; see Retry-After"},
}


def _locked(db: SessionDep, username: str, address: str) -> ApiError:
    wait = lockout.retry_after(db, username, address)
    return ApiError(429, "Too many failed logins",
                    f"too many failed logins for this user from {address}: try again in {wait} s",
                    headers={"Retry-After": str(wait)})


@router.post("/access-token", response_model=Token, responses=LOGIN_RESPONSES)
def login(request: Request, session: SessionDep, settings: SettingsDep, secret: SecretDep,
          form: Annotated[OAuth2PasswordRequestForm, Depends()]) -> Token:
    address = client_address(request, settings)[:64]
    username = form.username.strip().lower()[:80]
    slot = lockout.reserve(session, settings, username, address)
    if slot is None:
        raise _locked(session, username, address)
    user = session.scalar(select(User).where(func.lower(User.username) == username))
    ok = verify_password(form.password, user.password_hash if user else DUMMY_HASH) and bool(user and user.is_active)
    session.add(LoginAttempt(username=username, address=address, ts=datetime.now(UTC), ok=ok))
    if not ok or user is None:
        if slot.locked_until is not None:
            set_actor(session, Actor(None, username, "login"))
            record(session, "login_locked", "user_account", user.id if user else None,
                   after={"username": username, "address": address, "failures": slot.number,
                          "locked_until": slot.locked_until.isoformat()},
                   tenant_id=user.tenant_id if user else None)
        session.commit()
        raise ApiError(401, "Login failed", "wrong username or password", headers={"WWW-Authenticate": "Bearer"})
    lockout.clear(session, username, address)
    set_actor(session, Actor(user.id, user.username, "login"))
    record(session, "login", "user_account", user.id, tenant_id=user.tenant_id)
    auth = auth_sessions.open_session(session, settings, user, address)
    token = auth_sessions.issue_tokens(session, settings, secret, user, auth)
    session.commit()
    return token


@router.post("/refresh", response_model=Token, responses={401: {"description": "refresh refused"}})
def refresh(body: RefreshRequest, session: SessionDep, settings: SettingsDep, secret: SecretDep) -> Token:
    try:
        token = auth_sessions.rotate(session, settings, secret, body.refresh_token)
    except auth_sessions.RefreshRefused as exc:
        raise ApiError(401, "Not authenticated", str(exc), field="refresh_token") from exc
    session.commit()
    return token


@router.post("/logout", status_code=204)
def logout(body: RefreshRequest, session: SessionDep) -> None:
    """End the session the refresh token belongs to: its access and refresh tokens stop working."""
    sid = auth_sessions.session_of_refresh(session, body.refresh_token)
    if sid is not None:
        auth_sessions.revoke_session(session, sid, "logout")
        session.commit()
