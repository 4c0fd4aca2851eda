"""Users, roles, login sessions, refresh tokens, API keys, login attempts and lock-outs."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import ARRAY, Boolean, ForeignKey, Index, Integer, String, func, text
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import AuditedMixin, Base, IdMixin, TimestampMixin


class Role(StrEnum):
    OPERATOR = "operator"  # everything
    TENANT = "tenant"  # read its own tenant's objects and KPIs; nothing else exists
    INTEGRATOR = "integrator"  # the REST API through scoped API keys


class Scope(StrEnum):
    READ = "read"
    WRITE = "write"
    DEPLOY = "deploy"
    TELEMETRY = "telemetry"  # posts KPI samples measured outside the portal (POST /kpis/ingest)


class User(IdMixin, TimestampMixin, AuditedMixin, Base):
    __tablename__ = "user_account"
    audit_exclude = frozenset({"password_hash"})
    tenant_column = "tenant_id"
    # user names are unique regardless of case: "ADMIN" beside "admin" would deceive people
    __table_args__ = (Index("uq_user_account_username", text("lower(username)"), unique=True),)

    username: Mapped[str] = mapped_column(String(80))
    password_hash: Mapped[str] = mapped_column(String(200))
    role: Mapped[Role] = mapped_column(String(20))
    tenant_id: Mapped[int | None] = mapped_column(ForeignKey("tenant.id", ondelete="CASCADE"))
    full_name: Mapped[str] = mapped_column(String(120), default="")
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)


class AuthSession(Base):
    """One login: every access and refresh token carries its id (``sid``) and dies with it.

    The id is random (not a counter) so that it reveals nothing; it is looked up on every
    request by primary key, so revocation takes effect on the very next request.
    """

    __tablename__ = "auth_session"

    id: Mapped[str] = mapped_column(String(43), primary_key=True)
    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), index=True)
    created_at: Mapped[datetime] = mapped_column(server_default=func.now())
    expires_at: Mapped[datetime] = mapped_column()
    address: Mapped[str] = mapped_column(String(64), default="")
    revoked_at: Mapped[datetime | None] = mapped_column()
    revoked_reason: Mapped[str | None] = mapped_column(String(40))


class RefreshToken(IdMixin, Base):
    __tablename__ = "refresh_token"

    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), index=True)
    # the chain of rotated refresh tokens of one login; reuse of a spent one revokes it
    session_id: Mapped[str] = mapped_column(ForeignKey("auth_session.id", ondelete="CASCADE"), index=True)
    token_hash: Mapped[str] = mapped_column(String(64), unique=True)
    expires_at: Mapped[datetime] = mapped_column()
    revoked: Mapped[bool] = mapped_column(Boolean, default=False)


class ApiKey(IdMixin, TimestampMixin, AuditedMixin, Base):
    """An API key: only its SHA-256 is stored; the secret is shown once at creation."""

    __tablename__ = "api_key"
    audit_exclude = frozenset({"key_hash"})

    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), index=True)
    name: Mapped[str] = mapped_column(String(120))
    prefix: Mapped[str] = mapped_column(String(16), unique=True)  # public part, for lookup and display
    key_hash: Mapped[str] = mapped_column(String(64))
    scopes: Mapped[list[str]] = mapped_column(ARRAY(String(16)))
    # an integrator's key may be bound to one tenant: it then sees that tenant's objects only
    tenant_id: Mapped[int | None] = mapped_column(ForeignKey("tenant.id", ondelete="CASCADE"))
    revoked_at: Mapped[datetime | None] = mapped_column()
    last_used_at: Mapped[datetime | None] = mapped_column()


class LoginAttempt(IdMixin, Base):
    __tablename__ = "login_attempt"
    __table_args__ = (Index("ix_login_attempt_user_ts", "username", "ts"),)

    username: Mapped[str] = mapped_column(String(80))
    address: Mapped[str] = mapped_column(String(64))
    ts: Mapped[datetime] = mapped_column()
    ok: Mapped[bool] = mapped_column(Boolean)


class LoginThrottle(Base):
    """Failed logins per (user name, client address): the lock-out counter.

    One row per pair, updated by a single INSERT ... ON CONFLICT statement, so concurrent
    attempts serialise on the row lock and never count past the limit.
    """

    __tablename__ = "login_throttle"

    username: Mapped[str] = mapped_column(String(80), primary_key=True)  # lower-cased
    address: Mapped[str] = mapped_column(String(64), primary_key=True)
    failures: Mapped[int] = mapped_column(Integer, default=0)
    window_start: Mapped[datetime] = mapped_column()
    locked_until: Mapped[datetime | None] = mapped_column()
    lockouts: Mapped[int] = mapped_column(Integer, default=0)  # consecutive: the backoff exponent
