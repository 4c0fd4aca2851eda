from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictBool, model_validator
from zxcvbn import zxcvbn  # type: ignore[import-untyped]

from sliceportal.models.auth import Role, Scope
from sliceportal.schemas.common import DbId, Name, ORMModel, Version, plain_text

MIN_PASSWORD_LENGTH = 12
MIN_PASSWORD_SCORE = 3  # zxcvbn 0..4: 3 = "safely unguessable: moderate protection from offline attacks"


def _strong(password: str) -> str:
    """Length, then zxcvbn (Dropbox's estimator; its dictionaries hold the common and breached
    password lists, names and keyboard patterns): ten spaces or 1234567890 do not pass."""
    if not password.strip():
        raise ValueError("the password is blank")
    # only the first 100 characters are scored: zxcvbn's cost grows quickly with length
    result = zxcvbn(password[:100])
    if result["score"] < MIN_PASSWORD_SCORE:
        feedback = result["feedback"]
        hint = " ".join(filter(None, [feedback.get("warning"), *feedback.get("suggestions", [])]))
        raise ValueError(f"the password is too easy to guess{': ' + hint if hint else ''}")
    return password


def _username(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


# Unique regardless of case (the database's index is on lower(username)).
Username = Annotated[str, BeforeValidator(_username), Field(min_length=2, max_length=80, pattern=r"^[A-Za-z0-9_.@-]+$")]
Password = Annotated[str, Field(min_length=MIN_PASSWORD_LENGTH, max_length=256), AfterValidator(_strong)]


class Token(BaseModel):
    access_token: str
    refresh_token: str | None = Field(
        None,
        description="for API clients; browsers get it as an HttpOnly cookie instead, and a refresh made "
        "with the cookie returns none here (scripts never see a long-lived token)",
    )
    token_type: str = "bearer"
    expires_in: int


class RefreshRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    refresh_token: str | None = Field(
        None, min_length=10, max_length=200, description="omit it to use the HttpOnly refresh cookie"
    )


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: Username
    password: Password
    role: Role
    tenant_id: DbId | None = None
    full_name: Annotated[str, AfterValidator(plain_text)] = Field("", max_length=120)

    @model_validator(mode="after")
    def _tenant_iff_tenant_role(self) -> UserCreate:
        if (self.role is Role.TENANT) != (self.tenant_id is not None):
            raise ValueError("tenant_id is required for the tenant role and only for it")
        return self


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    password: Password | None = None
    full_name: Annotated[str, AfterValidator(plain_text)] | None = Field(None, max_length=120)
    is_active: StrictBool | None = None
    version: Version = None


class UserPublic(ORMModel):
    id: int
    username: str
    role: Role
    tenant_id: int | None
    full_name: str
    is_active: bool
    version: int


class UserUpdated(UserPublic):
    api_keys_revoked: int = Field(
        0,
        description="a new password revokes the user's API keys (they were "
        "created from sessions of the old one): how many this change revoked",
    )


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={"examples": [{"name": "grafana-probes", "scopes": ["telemetry"], "tenant_id": 1}]},
    )
    name: Name
    scopes: list[Scope] = Field(min_length=1, max_length=len(Scope))
    tenant_id: DbId | None = Field(
        None, description="bind the key to one tenant: it sees and changes only that tenant's objects"
    )
    user_id: DbId | None = Field(
        None,
        description="operators: create the key for this user (an integrator), "
        "with at most the scopes that user's role lets a key carry; default: your own",
    )


class ApiKeyPublic(ORMModel):
    id: int
    user_id: int
    name: str
    prefix: str
    scopes: list[Scope]
    tenant_id: int | None
    created_at: datetime
    revoked_at: datetime | None
    last_used_at: datetime | None


class ApiKeyCreated(ApiKeyPublic):
    secret: str = Field(description="the key itself: shown this once, stored only as a hash")


class AuditEntryPublic(ORMModel):
    id: int
    ts: datetime
    actor: str
    via: str
    action: str
    object_type: str
    object_id: int | None
    tenant_id: int | None
    before: dict[str, object] | None
    after: dict[str, object] | None
