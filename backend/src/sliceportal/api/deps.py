"""Request dependencies as ``Annotated`` aliases, so handlers read like declarations."""

from __future__ import annotations

import ipaddress
import threading
from collections.abc import AsyncIterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Annotated

import anyio.to_thread
import jwt
from anyio import CancelScope, CapacityLimiter
from fastapi import Depends, Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security import APIKeyHeader, OAuth2PasswordBearer
from sqlalchemy import select, update
from sqlalchemy.orm import Session

from sliceportal.api.errors import ApiError
from sliceportal.api.principals import PrincipalCache, credential_key
from sliceportal.core.config import Settings
from sliceportal.core.secret_store import signing_secret
from sliceportal.core.security import api_key_prefix, decode_access_token, sha256
from sliceportal.models import ApiKey, AuthSession, Role, Scope, User
from sliceportal.models.audit import Actor, set_actor

oauth2 = OAuth2PasswordBearer(tokenUrl="/api/v1/login/access-token", auto_error=False)
# a security scheme, not a bare header parameter: OpenAPI clients then offer it as a credential
api_key_header = APIKeyHeader(
    name="X-API-Key", auto_error=False, description="An API key (`spk_...`), as created under /api/v1/api-keys"
)


# Dependencies that do no I/O are ``async def``: FastAPI runs a plain ``def`` dependency in
# the thread pool, a hop per dependency per request (measured with bench/api_latency.py).
async def get_settings(request: Request) -> Settings:
    settings: Settings = request.app.state.settings
    return settings


# Requests that only read (RFC 9110's safe methods) run on autocommit sessions (core/db.py).
SAFE_METHODS = frozenset({"GET", "HEAD", "OPTIONS"})


async def get_session(request: Request) -> AsyncIterator[Session]:
    """A session for the request, opened and closed on the event loop: creating one does no
    I/O, and closing a read's (autocommit) sends nothing, where a ``def`` dependency cost two
    thread-pool hops a request. A write's close may roll back, a round trip: in a thread, but
    not one of the shared pool's. When every thread of that pool waits for a pooled database
    connection, the connection this close returns would otherwise wait for a thread: a
    deadlock until the pool's timeout (found by an open-loop load; FastAPI closes its own
    ``def`` dependencies the same way for the same reason). A write that committed has
    nothing left to roll back and closes on the loop."""
    state = request.app.state
    reads = request.method in SAFE_METHODS
    session = (state.read_sessionmaker if reads else state.sessionmaker)()
    try:
        yield session
    finally:
        # a session with no transaction (a read's, or a write's after its commit) holds no
        # connection: closing it sends nothing, so no hop
        if reads or not session.in_transaction():
            session.close()
        else:
            with CancelScope(shield=True):
                await anyio.to_thread.run_sync(session.close, limiter=CapacityLimiter(1))


_secret_lock = threading.Lock()


def get_secret(request: Request) -> str:
    """The token-signing secret, resolved on first use (so that commands which only build
    the app, such as ``sliceportal openapi``, create no secret file)."""
    state = request.app.state
    secret: str | None = getattr(state, "signing_secret", None)
    if secret is None:
        with _secret_lock:
            secret = getattr(state, "signing_secret", None) or signing_secret(state.settings)
            state.signing_secret = secret
    return secret


def wants_async(prefer: str | None) -> bool:
    """``Prefer: respond-async`` (RFC 7240: a list of preferences, each possibly with parameters)."""
    return prefer is not None and any(p.split(";")[0].strip().lower() == "respond-async" for p in prefer.split(","))


def client_address(request: Request, settings: Settings) -> str:
    """The client's address: the socket peer, or — only when the peer is a trusted proxy —
    the right-most X-Forwarded-For hop that is not itself a trusted proxy."""
    peer = request.client.host if request.client else "unknown"
    if not settings.trusted_proxies:
        return peer

    def trusted(addr: str) -> bool:
        try:
            ip = ipaddress.ip_address(addr)
        except ValueError:
            return False
        return any(ip in net for net in settings.trusted_proxies)

    if not trusted(peer):
        return peer
    hops = [h.strip() for h in ",".join(request.headers.getlist("x-forwarded-for")).split(",") if h.strip()]
    for hop in reversed(hops):
        if not trusted(hop):
            try:
                return str(ipaddress.ip_address(hop))
            except ValueError:
                return peer  # a forged, unparsable hop: fall back to what we know
    return peer


async def signing_secret_dep(request: Request) -> str:
    """``get_secret`` as a dependency: resolved once (a file read, in a thread), then from memory."""
    secret: str | None = getattr(request.app.state, "signing_secret", None)
    return secret if secret is not None else await run_in_threadpool(get_secret, request)


SettingsDep = Annotated[Settings, Depends(get_settings)]
SessionDep = Annotated[Session, Depends(get_session)]
SecretDep = Annotated[str, Depends(signing_secret_dep)]

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
    session_id: str | None = None  # the login session of a token; None for API keys
    key_tenant_id: int | None = None  # an API key bound to one tenant

    @property
    def tenant_scope(self) -> int | None:
        """The tenant whose objects alone exist for this principal; None = all tenants."""
        if self.role is Role.TENANT:
            return self.tenant_id
        return self.key_tenant_id


LAST_USED_RESOLUTION = timedelta(minutes=1)


def _unauthorized(detail: str) -> ApiError:
    return ApiError(401, "Not authenticated", detail, headers={"WWW-Authenticate": "Bearer"})


# A checked credential and until when it may be remembered (epoch seconds; api/principals.py).
Checked = tuple[Principal, float]


def _from_api_key(session: Session, secret: str) -> Checked:
    prefix = api_key_prefix(secret)
    key = session.scalar(select(ApiKey).where(ApiKey.prefix == prefix)) if prefix else None
    if key is None or key.revoked_at is not None or key.key_hash != sha256(secret):
        raise _unauthorized("invalid or revoked API key")
    user = session.get(User, key.user_id)
    if user is None or not user.is_active:
        raise _unauthorized("the key's user is disabled")
    now = datetime.now(UTC)
    # last use to the minute: a write (and a commit, flushed to disk) on every request of a
    # key would be most of what an integrator's read costs
    last_used = key.last_used_at
    if last_used is None or now - last_used >= LAST_USED_RESOLUTION:
        session.execute(update(ApiKey).where(ApiKey.id == key.id).values(last_used_at=now))
        session.commit()
        last_used = now
    scopes = frozenset(Scope(s) for s in key.scopes) & KEY_ROLE_SCOPES[Role(user.role)]
    principal = Principal(
        user.id,
        user.username,
        Role(user.role),
        user.tenant_id,
        scopes,
        f"api_key:{key.prefix}",
        key_tenant_id=key.tenant_id,
    )
    # remembered until its next last use is due, so that the write still happens each minute
    return principal, (last_used + LAST_USED_RESOLUTION).timestamp()


def _from_token(session: Session, secret: str, token: str) -> Checked:
    try:
        claims = decode_access_token(token, secret)
    except jwt.PyJWTError as exc:
        raise _unauthorized(f"invalid token: {exc}") from exc
    # One primary-key lookup joined with the user: the session must exist, belong to the
    # token's subject and not be revoked or expired. Columns, not a User object: this runs
    # on every request, and the principal needs only these.
    row = session.execute(
        select(
            User.id,
            User.username,
            User.role,
            User.tenant_id,
            User.is_active,
            AuthSession.revoked_at,
            AuthSession.expires_at,
        )
        .join(AuthSession, AuthSession.user_id == User.id)
        .where(AuthSession.id == claims["sid"], User.id == int(claims["sub"]))
    ).first()
    if row is None:
        raise _unauthorized("session unknown: log in again")
    if row.revoked_at is not None or row.expires_at <= datetime.now(UTC):
        raise _unauthorized("session ended (logged out, password changed or expired): log in again")
    if not row.is_active:
        raise _unauthorized("user disabled or removed")
    principal = Principal(
        row.id,
        row.username,
        Role(row.role),
        row.tenant_id,
        ROLE_SCOPES[Role(row.role)],
        "token",
        session_id=claims["sid"],
    )
    return principal, min(float(claims["exp"]), row.expires_at.timestamp())


def check_credential(session: Session, signing_key: str, token: str | None, x_api_key: str | None) -> Checked:
    secret = x_api_key or (token if token and api_key_prefix(token) else None)
    if secret:
        return _from_api_key(session, secret)
    if not token:
        raise _unauthorized("log in (POST /api/v1/login/access-token) or send an API key")
    return _from_token(session, signing_key, token)


def _check_and_release(session: Session, signing_key: str, token: str | None, x_api_key: str | None) -> Checked:
    """``check_credential``, and the session's connection back to the pool before the request
    waits for the thread of its route: a request that holds a pooled connection while it waits
    for a thread can deadlock the worker once every thread waits for a connection."""
    try:
        return check_credential(session, signing_key, token, x_api_key)
    finally:
        session.rollback()  # nothing of the request is written yet (a key's last use commits itself)


def authenticate(session: Session, signing_key: str, token: str | None, x_api_key: str | None) -> Principal:
    return check_credential(session, signing_key, token, x_api_key)[0]


async def get_principal(
    request: Request,
    session: SessionDep,
    signing_key: SecretDep,
    token: Annotated[str | None, Depends(oauth2)],
    x_api_key: Annotated[str | None, Depends(api_key_header)] = None,
) -> Principal:
    """The request's principal: remembered by this process (api/principals.py) or checked
    against the database, in the thread pool since that is I/O."""
    cache: PrincipalCache = request.app.state.principals
    credential = x_api_key or token
    key = credential_key(credential) if credential else None
    remembered = cache.get(key) if key else None
    if remembered is not None:
        principal = remembered
    else:
        generation = cache.generation
        principal, valid_until = await run_in_threadpool(_check_and_release, session, signing_key, token, x_api_key)
        if key:
            cache.put(key, principal, valid_until, generation)
    set_actor(session, Actor(principal.user_id, principal.username, principal.via))
    return principal


def get_stream_principal(
    request: Request,
    signing_key: SecretDep,
    token: Annotated[str | None, Depends(oauth2)],
    x_api_key: Annotated[str | None, Depends(api_key_header)] = None,
) -> Principal:
    """For long-lived streams: authenticate with a session of its own, returned at once,
    rather than holding a pooled connection for the stream's whole life."""
    with request.app.state.sessionmaker() as session:
        principal = authenticate(session, signing_key, token, x_api_key)
    if Scope.READ not in principal.scopes:
        raise ApiError(403, "Forbidden", "this needs the 'read' scope")
    return principal


CurrentUser = Annotated[Principal, Depends(get_principal)]
StreamReader = Annotated[Principal, Depends(get_stream_principal)]


# Where a key bound to one tenant may write: routes that check every object against the
# principal's tenant scope (intents: only the tenant's subscribers and slices). Everything
# else (slices' tenant choice, backends, deployments) spans tenants, so a bound key only reads there.
BOUND_KEY_WRITABLE = ("/api/v1/subscribers", "/api/v1/intents", "/api/v1/kpis/ingest")


def require(scope: Scope) -> object:
    async def check(principal: CurrentUser, request: Request) -> Principal:
        if scope not in principal.scopes:
            raise ApiError(
                403,
                "Forbidden",
                f"this needs the {scope.value!r} scope, which "
                f"{'your key' if principal.via.startswith('api_key') else 'your role'} lacks",
            )
        if (
            scope is not Scope.READ
            and principal.key_tenant_id is not None
            and not request.url.path.startswith(BOUND_KEY_WRITABLE)
        ):
            raise ApiError(
                403,
                "Forbidden",
                f"this key is bound to tenant {principal.key_tenant_id}; it may change only that tenant's subscribers",
            )
        return principal

    return Depends(check)


async def require_operator(principal: CurrentUser) -> Principal:
    if principal.role is Role.TENANT or principal.key_tenant_id is not None:
        raise ApiError(403, "Forbidden", "only operators and integrators (with keys not bound to a tenant) see this")
    return principal


Reader = Annotated[Principal, require(Scope.READ)]
Writer = Annotated[Principal, require(Scope.WRITE)]
Deployer = Annotated[Principal, require(Scope.DEPLOY)]
NotTenant = Annotated[Principal, Depends(require_operator)]
