"""Log in (password → short-lived access token + refresh token), refresh, log out.

Every login opens a server-side session (``api/auth_sessions.py``) that its tokens name;
failed logins are throttled per (user, client address) (``api/lockout.py``).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Cookie, Depends, Request, Response
from fastapi.security import OAuth2PasswordRequestForm
from sqlalchemy import func, select

from sliceportal.api import auth_sessions, lockout
from sliceportal.api.deps import SecretDep, SessionDep, SettingsDep, client_address
from sliceportal.api.errors import ApiError
from sliceportal.api.routing import session_router
from sliceportal.core.security import DUMMY_HASH, verify_password
from sliceportal.models import LoginAttempt, User
from sliceportal.models.audit import Actor, record, set_actor
from sliceportal.schemas.auth import RefreshRequest, Token

router = session_router(prefix="/login", tags=["login"])

# The browser keeps the refresh token where scripts cannot read it: HttpOnly, SameSite=Strict
# (no cross-site request carries it), sent only to /api/v1/login/* (refresh and logout).
REFRESH_COOKIE = "sp_refresh"
COOKIE_PATH = "/api/v1/login"
RefreshCookie = Annotated[str | None, Cookie(alias=REFRESH_COOKIE, include_in_schema=False)]


def _set_cookie(request: Request, response: Response, settings: SettingsDep, token: str) -> None:
    response.set_cookie(
        REFRESH_COOKIE,
        token,
        max_age=settings.refresh_token_days * 86400,
        path=COOKIE_PATH,
        httponly=True,
        samesite="strict",
        secure=request.url.scheme == "https",
    )


def _clear_cookie(request: Request, response: Response) -> None:
    response.delete_cookie(
        REFRESH_COOKIE, path=COOKIE_PATH, httponly=True, samesite="strict", secure=request.url.scheme == "https"
    )


LOGIN_RESPONSES: dict[int | str, dict[str, str]] = {
    401: {"description": "wrong user name or password"},
    429: {"description": "too many failed logins from this address for this user; see Retry-After"},
}


def _locked(db: SessionDep, username: str, address: str) -> ApiError:
    wait = lockout.retry_after(db, username, address)
    return ApiError(
        429,
        "Too many failed logins",
        f"too many failed logins for this user from {address}: try again in {wait} s",
        headers={"Retry-After": str(wait)},
    )


@router.post("/access-token", response_model=Token, responses=LOGIN_RESPONSES)
def login(
    request: Request,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
    secret: SecretDep,
    form: Annotated[OAuth2PasswordRequestForm, Depends()],
) -> Token:
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
            record(
                session,
                "login_locked",
                "user_account",
                user.id if user else None,
                after={
                    "username": username,
                    "address": address,
                    "failures": slot.number,
                    "locked_until": slot.locked_until.isoformat(),
                },
                tenant_id=user.tenant_id if user else None,
            )
        session.commit()
        raise ApiError(401, "Login failed", "wrong username or password", headers={"WWW-Authenticate": "Bearer"})
    lockout.clear(session, username, address)
    set_actor(session, Actor(user.id, user.username, "login"))
    record(session, "login", "user_account", user.id, tenant_id=user.tenant_id)
    auth = auth_sessions.open_session(session, settings, user, address)
    token = auth_sessions.issue_tokens(session, settings, secret, user, auth)
    session.commit()
    assert token.refresh_token is not None
    _set_cookie(request, response, settings, token.refresh_token)
    return token


@router.post("/refresh", response_model=Token, responses={401: {"description": "refresh refused"}})
def refresh(
    request: Request,
    response: Response,
    session: SessionDep,
    settings: SettingsDep,
    secret: SecretDep,
    cookie: RefreshCookie = None,
    body: RefreshRequest | None = None,
) -> Token:
    """A new access token (and the next refresh token) for the refresh token in the body or,
    when the body has none, in the HttpOnly cookie."""
    presented = (body.refresh_token if body else None) or cookie
    if not presented:
        raise ApiError(401, "Not authenticated", "no refresh token: log in", field="refresh_token")
    try:
        token = auth_sessions.rotate(session, settings, secret, presented)
    except auth_sessions.RefreshRefused as exc:
        _clear_cookie(request, response)
        raise ApiError(
            401,
            "Not authenticated",
            str(exc),
            field="refresh_token",
            headers={"set-cookie": response.headers["set-cookie"]},
        ) from exc
    session.commit()
    assert token.refresh_token is not None
    if body is None or body.refresh_token is None:  # the browser: the new token goes into the cookie only
        _set_cookie(request, response, settings, token.refresh_token)
        token = token.model_copy(update={"refresh_token": None})
    return token


@router.post("/logout", status_code=204)
def logout(
    request: Request,
    response: Response,
    session: SessionDep,
    cookie: RefreshCookie = None,
    body: RefreshRequest | None = None,
) -> None:
    """End the session the refresh token (body or cookie) belongs to: its access and refresh
    tokens stop working at once."""
    presented = (body.refresh_token if body else None) or cookie
    sid = auth_sessions.session_of_refresh(session, presented) if presented else None
    if sid is not None:
        auth_sessions.revoke_session(session, sid, "logout")
        session.commit()
    _clear_cookie(request, response)
