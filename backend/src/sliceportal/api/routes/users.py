"""Users (operators manage them), the current user, and API keys (each user manages its own)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import Header, Query, Response
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.auth_sessions import revoke_user_sessions
from sliceportal.api.crud import apply_changes, check_version, etag, get_scoped, page
from sliceportal.api.deps import KEY_ROLE_SCOPES, ROLE_SCOPES, CurrentUser, NotTenant, Principal, SessionDep
from sliceportal.api.errors import ApiError, not_found
from sliceportal.api.routing import session_router
from sliceportal.core.security import hash_password, new_api_key, sha256
from sliceportal.models import ApiKey, Role, Tenant, User
from sliceportal.schemas.auth import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyPublic,
    UserCreate,
    UserPublic,
    UserUpdate,
    UserUpdated,
)
from sliceportal.schemas.common import ListQuery, Page, PathId

router = session_router(prefix="/users", tags=["users"])
keys = session_router(prefix="/api-keys", tags=["api-keys"])


def _operator(principal: CurrentUser) -> None:
    if principal.role is not Role.OPERATOR:
        raise ApiError(403, "Forbidden", "only operators manage users")


@router.get("/me", response_model=UserPublic)
def read_me(principal: CurrentUser, session: SessionDep) -> User:
    user = session.get(User, principal.user_id)
    assert user is not None
    return user


@router.get("", response_model=Page[UserPublic])
def list_users(principal: CurrentUser, session: SessionDep, params: ListQuery) -> Page[UserPublic]:
    _operator(principal)
    rows, count = page(
        session,
        select(User),
        params,
        {"id": User.id, "username": User.username, "role": User.role},
        [User.username, User.full_name],
    )
    return Page(data=[UserPublic.model_validate(u) for u in rows], count=count)


@router.post("", response_model=UserPublic, status_code=201)
def create_user(body: UserCreate, principal: CurrentUser, session: SessionDep) -> User:
    _operator(principal)
    if body.tenant_id is not None and session.get(Tenant, body.tenant_id) is None:
        raise ApiError(422, "Validation failed", f"tenant {body.tenant_id} does not exist", field="tenant_id")
    taken = session.scalar(select(User.username).where(func.lower(User.username) == body.username.lower()))
    if taken is not None:
        raise ApiError(
            409,
            "Conflict",
            f"the user name is taken (as {taken!r}; names are unique regardless of case)",
            field="username",
        )
    user = User(
        username=body.username,
        password_hash=hash_password(body.password),
        role=body.role,
        tenant_id=body.tenant_id,
        full_name=body.full_name,
    )
    session.add(user)
    session.commit()
    return user


def _revoke_keys(session: Session, user_id: int) -> int:
    """Revoke every live key of a user (one audit row each); returns how many."""
    live = list(session.scalars(select(ApiKey).where(ApiKey.user_id == user_id, ApiKey.revoked_at.is_(None))))
    now = datetime.now(UTC)
    for key in live:
        key.revoked_at = now
    return len(live)


@router.patch("/{user_id}", response_model=UserUpdated)
def update_user(
    user_id: PathId,
    body: UserUpdate,
    principal: CurrentUser,
    session: SessionDep,
    response: Response,
    if_match: Annotated[str | None, Header()] = None,
) -> UserUpdated:
    _operator(principal)
    user = get_scoped(session, User, user_id, None, "user")
    check_version(user, if_match, body.version)
    changes = body.model_dump(exclude_unset=True, exclude={"version"})
    if "password" in changes:
        changes["password_hash"] = hash_password(changes.pop("password") or "")
    apply_changes(user, changes, not_null=("full_name", "is_active", "password_hash"))
    # A new password or a disabled account ends every session at once: whoever held the old
    # credentials (or tokens made from them) is out on their next request.
    # Its API keys too (#27): they were minted from sessions of the old password, perhaps by
    # whoever knew it; the response says how many, so the operator can hand out new ones.
    revoked = 0
    if "password_hash" in changes:
        revoke_user_sessions(session, user.id, "password-changed")
        revoked = _revoke_keys(session, user.id)
    if changes.get("is_active") is False:
        revoke_user_sessions(session, user.id, "user-disabled")
    session.commit()
    etag(response, user)
    return UserUpdated.model_validate({**UserPublic.model_validate(user).model_dump(), "api_keys_revoked": revoked})


@keys.get("", response_model=list[ApiKeyPublic])
def list_keys(
    principal: NotTenant,
    session: SessionDep,
    all_users: Annotated[bool, Query(description="operators: every user's keys")] = False,
) -> list[ApiKey]:
    stmt = select(ApiKey).order_by(ApiKey.id)
    if not (all_users and principal.role is Role.OPERATOR):
        stmt = stmt.where(ApiKey.user_id == principal.user_id)
    return list(session.scalars(stmt))


def _key_owner(session: Session, principal: Principal, user_id: int | None) -> User:
    """Whose key it is: the caller's own, or -- operators only -- another user's (an integrator's)."""
    owner = session.get(User, user_id if user_id is not None else principal.user_id)
    if user_id is not None and user_id != principal.user_id:
        if principal.role is not Role.OPERATOR:
            raise ApiError(403, "Forbidden", "only operators create keys for other users", field="user_id")
        if owner is None or not owner.is_active:
            raise ApiError(422, "Validation failed", f"user {user_id} does not exist or is disabled", field="user_id")
    assert owner is not None
    return owner


@keys.post("", response_model=ApiKeyCreated, status_code=201)
def create_key(body: ApiKeyCreate, principal: NotTenant, session: SessionDep) -> ApiKeyCreated:
    """A key never carries more than its creator may grant (#27): one's own key at most the
    scopes of one's login (an integrator's login reads only), a key an operator creates for
    another user at most what that user's role lets a key carry."""
    if not principal.via == "token":
        raise ApiError(403, "Forbidden", "API keys are created from a logged-in session, not with another key")
    owner = _key_owner(session, principal, body.user_id)
    grantable = principal.scopes & KEY_ROLE_SCOPES[Role(owner.role)]
    if owner.id == principal.user_id:
        grantable &= ROLE_SCOPES[principal.role]
    beyond = sorted({s.value for s in body.scopes} - {s.value for s in grantable})
    if beyond:
        who = "your login" if owner.id == principal.user_id else f"user {owner.username}'s role"
        raise ApiError(
            422,
            "Validation failed",
            f"{who} cannot grant the scope(s) {', '.join(beyond)} "
            f"(at most: {', '.join(sorted(s.value for s in grantable))}); an operator creates keys "
            "with more for an integrator (user_id)",
            field="scopes",
        )
    if body.tenant_id is not None and session.get(Tenant, body.tenant_id) is None:
        raise ApiError(422, "Validation failed", f"tenant {body.tenant_id} does not exist", field="tenant_id")
    prefix, secret = new_api_key()
    key = ApiKey(
        user_id=owner.id,
        name=body.name,
        prefix=prefix,
        key_hash=sha256(secret),
        scopes=sorted({s.value for s in body.scopes}),
        tenant_id=body.tenant_id,
    )
    session.add(key)
    session.commit()
    return ApiKeyCreated.model_validate({**ApiKeyPublic.model_validate(key).model_dump(), "secret": secret})


@keys.delete("/{key_id}", status_code=204)
def revoke_key(key_id: PathId, principal: NotTenant, session: SessionDep) -> None:
    """Revoke a key: one's own, or — for an operator — anyone's (a leaked integrator key)."""
    key = session.get(ApiKey, key_id)
    if key is None or (key.user_id != principal.user_id and principal.role is not Role.OPERATOR):
        raise not_found("API key", key_id)
    if key.revoked_at is None:
        key.revoked_at = datetime.now(UTC)
        session.commit()
