"""Users (operators manage them), the current user, and API keys (each user manages its own)."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Annotated

from fastapi import APIRouter, Header, Query, Response
from sqlalchemy import func, select

from sliceportal.api.auth_sessions import revoke_user_sessions
from sliceportal.api.crud import apply_changes, check_version, etag, get_scoped, page
from sliceportal.api.deps import CurrentUser, NotTenant, SessionDep
from sliceportal.api.errors import ApiError, not_found
from sliceportal.core.security import hash_password, new_api_key, sha256
from sliceportal.models import ApiKey, Role, Tenant, User
from sliceportal.schemas.auth import (
    ApiKeyCreate,
    ApiKeyCreated,
    ApiKeyPublic,
    UserCreate,
    UserPublic,
    UserUpdate,
)
from sliceportal.schemas.common import ListQuery, Page, PathId

router = APIRouter(prefix="/users", tags=["users"])
keys = APIRouter(prefix="/api-keys", tags=["api-keys"])


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
    rows, count = page(session, select(User), params, {"id": User.id, "username": User.username,
                                                       "role": User.role}, [User.username, User.full_name])
    return Page(data=[UserPublic.model_validate(u) for u in rows], count=count)


@router.post("", response_model=UserPublic, status_code=201)
def create_user(body: UserCreate, principal: CurrentUser, session: SessionDep) -> User:
    _operator(principal)
    if body.tenant_id is not None and session.get(Tenant, body.tenant_id) is None:
        raise ApiError(422, "Validation failed", f"tenant {body.tenant_id} does not exist", field="tenant_id")
    taken = session.scalar(select(User.username).where(func.lower(User.username) == body.username.lower()))
    if taken is not None:
        raise ApiError(409, "Conflict", f"the user name is taken (as {taken!r}; names are unique regardless of case)",
                       field="username")
    user = User(username=body.username, password_hash=hash_password(body.password), role=body.role,
                tenant_id=body.tenant_id, full_name=body.full_name)
    session.add(user)
    session.commit()
    return user


@router.patch("/{user_id}", response_model=UserPublic)
def update_user(user_id: PathId, body: UserUpdate, principal: CurrentUser, session: SessionDep, response: Response,
                if_match: Annotated[str | None, Header()] = None) -> User:
    _operator(principal)
    user = get_scoped(session, User, user_id, None, "user")
    check_version(user, if_match, body.version)
    changes = body.model_dump(exclude_unset=True, exclude={"version"})
    if "password" in changes:
        changes["password_hash"] = hash_password(changes.pop("password") or "")
    apply_changes(user, changes, not_null=("full_name", "is_active", "password_hash"))
    # A new password or a disabled account ends every session at once: whoever held the old
    # credentials (or tokens made from them) is out on their next request.
    if "password_hash" in changes:
        revoke_user_sessions(session, user.id, "password-changed")
    if changes.get("is_active") is False:
        revoke_user_sessions(session, user.id, "user-disabled")
    session.commit()
    etag(response, user)
    return user


@keys.get("", response_model=list[ApiKeyPublic])
def list_keys(principal: NotTenant, session: SessionDep,
              all_users: Annotated[bool, Query(description="operators: every user's keys")] = False) -> list[ApiKey]:
    stmt = select(ApiKey).order_by(ApiKey.id)
    if not (all_users and principal.role is Role.OPERATOR):
        stmt = stmt.where(ApiKey.user_id == principal.user_id)
    return list(session.scalars(stmt))


@keys.post("", response_model=ApiKeyCreated, status_code=201)
def create_key(body: ApiKeyCreate, principal: NotTenant, session: SessionDep) -> ApiKeyCreated:
    if not principal.via == "token":
        raise ApiError(403, "Forbidden", "API keys are created from a logged-in session, not with another key")
    if body.tenant_id is not None and session.get(Tenant, body.tenant_id) is None:
        raise ApiError(422, "Validation failed", f"tenant {body.tenant_id} does not exist", field="tenant_id")
    prefix, secret = new_api_key()
    key = ApiKey(user_id=principal.user_id, name=body.name, prefix=prefix, key_hash=sha256(secret),
                 scopes=sorted({s.value for s in body.scopes}), tenant_id=body.tenant_id)
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
