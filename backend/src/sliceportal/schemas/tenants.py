from __future__ import annotations

from datetime import datetime
from ipaddress import IPv4Network

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.schemas.common import Name, ORMModel, Version


class TenantBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    vni: int = Field(ge=1, le=16_777_215, description="VXLAN network identifier marking the tenant on the wire")
    vlan: int | None = Field(None, ge=1, le=4094)
    ue_pool: IPv4Network | None = Field(None, description="CIDR every subscriber address must lie in")
    contact: str | None = Field(None, max_length=200)
    description: str = Field("", max_length=2000)


class TenantCreate(TenantBase):
    pass


class TenantUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    vni: int | None = Field(None, ge=1, le=16_777_215)
    vlan: int | None = Field(None, ge=1, le=4094)
    ue_pool: IPv4Network | None = None
    contact: str | None = Field(None, max_length=200)
    description: str | None = Field(None, max_length=2000)
    version: Version = None


class TenantPublic(ORMModel):
    id: int
    name: str
    vni: int
    vlan: int | None
    ue_pool: IPv4Network | None
    contact: str
    description: str
    version: int
    created_at: datetime
    updated_at: datetime
