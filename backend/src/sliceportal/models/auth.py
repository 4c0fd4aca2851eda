"""Users, roles, refresh tokens, API keys and login attempts."""

from __future__ import annotations

from datetime import datetime
from enum import StrEnum

from sqlalchemy import ARRAY, Boolean, ForeignKey, Index, String
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


class User(IdMixin, TimestampMixin, AuditedMixin, Base):
    __tablename__ = "user_account"
    audit_exclude = frozenset({"password_hash"})
    tenant_column = "tenant_id"

    username: Mapped[str] = mapped_column(String(80), unique=True)
    password_hash: Mapped[str] = mapped_column(String(200))
    role: Mapped[Role] = mapped_column(String(20))
    tenant_id: Mapped[int | None] = mapped_column(ForeignKey("tenant.id", ondelete="CASCADE"))
    full_name: Mapped[str] = mapped_column(String(120), default="")
    is_active: Mapped[bool] = mapped_column(Boolean, default=True)


class RefreshToken(IdMixin, Base):
    __tablename__ = "refresh_token"

    user_id: Mapped[int] = mapped_column(ForeignKey("user_account.id", ondelete="CASCADE"), index=True)
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
    revoked_at: Mapped[datetime | None] = mapped_column()
    last_used_at: Mapped[datetime | None] = mapped_column()


class LoginAttempt(IdMixin, Base):
    __tablename__ = "login_attempt"
    __table_args__ = (Index("ix_login_attempt_user_ts", "username", "ts"),)

    username: Mapped[str] = mapped_column(String(80))
    address: Mapped[str] = mapped_column(String(64))
    ts: Mapped[datetime] = mapped_column()
    ok: Mapped[bool] = mapped_column(Boolean)
