"""Login sessions: open one at login, rotate its refresh tokens, revoke it (or all of a user's).

Every access token names its session (``sid``) and every request checks that session in the
database (a primary-key lookup, joined with the user), so a revoked session — logout,
password change, user disabled, refresh-token reuse — stops working on the next request.
Nothing about a session is cached in the process: a cache would let a revoked one live on.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from sqlalchemy import select, update
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings
from sliceportal.core.security import create_access_token, new_refresh_token, new_session_id, sha256
from sliceportal.models import AuthSession, RefreshToken, User
from sliceportal.schemas.auth import Token


class RefreshRefused(Exception):
    """The refresh token is unknown, expired, spent or its session is over."""


def open_session(db: Session, settings: Settings, user: User, address: str) -> AuthSession:
    auth = AuthSession(
        id=new_session_id(),
        user_id=user.id,
        address=address[:64],
        expires_at=datetime.now(UTC) + timedelta(days=settings.refresh_token_days),
    )
    db.add(auth)
    db.flush()
    return auth


def issue_tokens(db: Session, settings: Settings, secret: str, user: User, auth: AuthSession) -> Token:
    """A fresh access token and the next refresh token of the session's chain."""
    refresh = new_refresh_token()
    db.add(RefreshToken(user_id=user.id, session_id=auth.id, token_hash=sha256(refresh), expires_at=auth.expires_at))
    access = create_access_token(user.id, user.role, auth.id, secret, settings.access_token_minutes)
    return Token(access_token=access, refresh_token=refresh, expires_in=settings.access_token_minutes * 60)


def rotate(db: Session, settings: Settings, secret: str, refresh_token: str) -> Token:
    """Spend a refresh token for a new pair. A token spent twice means it was stolen (either
    the thief or the user used it first): the whole session ends, both lose it."""
    now = datetime.now(UTC)
    stored = db.scalar(select(RefreshToken).where(RefreshToken.token_hash == sha256(refresh_token)).with_for_update())
    if stored is None:
        raise RefreshRefused("refresh token unknown")
    auth = db.get(AuthSession, stored.session_id)
    if stored.revoked:
        revoke_session(db, stored.session_id, "refresh-token-reuse")
        db.commit()
        raise RefreshRefused("refresh token already used: the session is revoked, log in again")
    if auth is None or auth.revoked_at is not None or auth.expires_at <= now or stored.expires_at <= now:
        raise RefreshRefused("session expired or revoked: log in again")
    user = db.get(User, stored.user_id)
    if user is None or not user.is_active:
        raise RefreshRefused("user disabled or removed")
    stored.revoked = True
    return issue_tokens(db, settings, secret, user, auth)


def revoke_session(db: Session, session_id: str, reason: str) -> None:
    db.execute(
        update(AuthSession)
        .where(AuthSession.id == session_id, AuthSession.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC), revoked_reason=reason)
    )
    db.execute(update(RefreshToken).where(RefreshToken.session_id == session_id).values(revoked=True))


def revoke_user_sessions(db: Session, user_id: int, reason: str) -> int:
    """End every session of a user (password changed, user disabled); returns how many."""
    result = db.execute(
        update(AuthSession)
        .where(AuthSession.user_id == user_id, AuthSession.revoked_at.is_(None))
        .values(revoked_at=datetime.now(UTC), revoked_reason=reason)
    )
    db.execute(update(RefreshToken).where(RefreshToken.user_id == user_id).values(revoked=True))
    return int(getattr(result, "rowcount", 0) or 0)


def session_of_refresh(db: Session, refresh_token: str) -> str | None:
    return db.scalar(select(RefreshToken.session_id).where(RefreshToken.token_hash == sha256(refresh_token)))
