"""Request dependencies as ``Annotated`` aliases, so handlers read like declarations."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Annotated

import jwt
from fastapi import Depends, Header, Request
from fastapi.security import OAuth2PasswordBearer
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from sliceportal.api.errors import ApiError
from sliceportal.core.config import Settings
from sliceportal.core.security import api_key_prefix, decode_access_token, sha256
from sliceportal.models import ApiKey, Role, Scope, User
from sliceportal.models.audit import Actor, set_actor

oauth2 = OAuth2PasswordBearer(tokenUrl="/api/v1/login/access-token", auto_error=False)


def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


def get_session(request: Request) -> Iterator[Session]:
    with request.app.state.sessionmaker() as session:
        yield session


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]

ALL_SCOPES = frozenset(Scope)
ROLE_SCOPES = {
    Role.OPERATOR: ALL_SCOPES,
    Role.TENANT: frozenset({Scope.READ}),
    # Integrators log in to manage their keys; the API itself they drive with keys.
    Role.INTEGRATOR: frozenset({Scope.READ}),
}

# What a key can ever carry, by its owner's role: a key never exceeds its owner.
KEY_ROLE_SCOPES = {Role.OPERATOR: ALL_SCOPES, Role.INTEGRATOR: ALL_SCOPES, Role.TENANT: frozenset({Scope.READ})}


@dataclass(frozen=True)
class Principal:
    user_id: int
    username: str
    role: Role
    tenant_id: int | None
    scopes: frozenset[Scope]
    via: str

    @property
    def tenant_scope(self) -> int | None:
        """The tenant whose objects alone exist for this principal; None = all tenants."""
        return self.tenant_id if self.role is Role.TENANT else None


def _unauthorized(detail: str) -> ApiError:
    return ApiError(401, "Not authenticated", detail, headers={"WWW-Authenticate": "Bearer"})


def _from_api_key(session: Session, secret: str) -> Principal:
    prefix = api_key_prefix(secret)
    key = session.scalar(select(ApiKey).where(ApiKey.prefix == prefix)) if prefix else None
    if key is None or key.revoked_at is not None or key.key_hash != sha256(secret):
        raise _unauthorized("invalid or revoked API key")
    user = session.get(User, key.user_id)
    if user is None or not user.is_active:
        raise _unauthorized("the key's user is disabled")
    session.execute(update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=datetime.now(UTC)))
    session.commit()
    scopes = frozenset(Scope(s) for s in key.scopes) & KEY_ROLE_SCOPES[Role(user.role)]
    return Principal(user.id, user.username, user.role, user.tenant_id, scopes, f"api_key:{key.prefix}")


def _authenticate(session: Session, settings: Settings, token: str | None, x_api_key: str | None) -> Principal:
    secret = x_api_key or (token if token and api_key_prefix(token) else None)
    if secret:
        principal = _from_api_key(session, secret)
    else:
        if not token:
            raise _unauthorized("log in (POST /api/v1/login/access-token) or send an API key")
        try:
            claims = decode_access_token(token, settings.secret_key)
        except jwt.PyJWTError as exc:
            raise _unauthorized(f"invalid token: {exc}") from exc
        user = session.get(User, int(claims["sub"]))
        if user is None or not user.is_active:
            raise _unauthorized("user disabled or removed")
        principal = Principal(user.id, user.username, Role(user.role), user.tenant_id,
                              ROLE_SCOPES[Role(user.role)], "token")
    return principal


def get_principal(
    session: SessionDep, settings: SettingsDep,
    token: Annotated[str | None, Depends(oauth2)],
    x_api_key: Annotated[str | None, Header()] = None,
) -> Principal:
    principal = _authenticate(session, settings, token, x_api_key)
    set_actor(session, Actor(principal.user_id, principal.username, principal.via))
    return principal


def get_stream_principal(
    request: Request, settings: SettingsDep,
    token: Annotated[str | None, Depends(oauth2)],
    x_api_key: Annotated[str | None, Header()] = None,
) -> Principal:
    """For long-lived streams: authenticate with a session of its own, returned at once,
    rather than holding a pooled connection for the stream's whole life."""
    with request.app.state.sessionmaker() as session:
        principal = _authenticate(session, settings, token, x_api_key)
    if Scope.READ not in principal.scopes:
        raise ApiError(403, "Forbidden", "this needs the 'read' scope")
    return principal


CurrentUser = Annotated[Principal, Depends(get_principal)]
StreamReader = Annotated[Principal, Depends(get_stream_principal)]


def require(scope: Scope) -> object:
    def check(principal: CurrentUser) -> Principal:
        if scope not in principal.scopes:
            raise ApiError(403, "Forbidden", f"this needs the {scope.value!r} scope, which "
                           f"{'your key' if principal.via.startswith('api_key') else 'your role'} lacks")
        return principal
    return Depends(check)


def require_operator(principal: CurrentUser) -> Principal:
    if principal.role is Role.TENANT:
        raise ApiError(403, "Forbidden", "only operators and integrators see this")
    return principal


Reader = Annotated[Principal, require(Scope.READ)]
Writer = Annotated[Principal, require(Scope.WRITE)]
Deployer = Annotated[Principal, require(Scope.DEPLOY)]
NotTenant = Annotated[Principal, Depends(require_operator)]
