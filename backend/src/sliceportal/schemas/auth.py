from __future__ import annotations

from datetime import datetime
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, model_validator

from sliceportal.models.auth import Role, Scope
from sliceportal.schemas.common import DbId, Name, ORMModel, Version

Username = Annotated[str, Field(min_length=2, max_length=80, pattern=r"^[A-Za-z0-9_.@-]+$")]
Password = Annotated[str, Field(min_length=10, max_length=256)]


class Token(BaseModel):
    access_token: str
    refresh_token: str | None = Field(
        None, description="for API clients; browsers get it as an HttpOnly cookie instead, and a refresh made "
        "with the cookie returns none here (scripts never see a long-lived token)")
    token_type: str = "bearer"
    expires_in: int


class RefreshRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    refresh_token: str | None = Field(None, min_length=10, max_length=200,
                                      description="omit it to use the HttpOnly refresh cookie")


class UserCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    username: Username
    password: Password
    role: Role
    tenant_id: DbId | None = None
    full_name: str = Field("", max_length=120)

    @model_validator(mode="after")
    def _tenant_iff_tenant_role(self) -> UserCreate:
        if (self.role is Role.TENANT) != (self.tenant_id is not None):
            raise ValueError("tenant_id is required for the tenant role and only for it")
        return self


class UserUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    password: Password | None = None
    full_name: str | None = Field(None, max_length=120)
    is_active: bool | None = None
    version: Version = None


class UserPublic(ORMModel):
    id: int
    username: str
    role: Role
    tenant_id: int | None
    full_name: str
    is_active: bool
    version: int


class ApiKeyCreate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    scopes: list[Scope] = Field(min_length=1, max_length=3)


class ApiKeyPublic(ORMModel):
    id: int
    name: str
    prefix: str
    scopes: list[Scope]
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
