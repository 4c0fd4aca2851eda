from __future__ import annotations

from datetime import datetime
from ipaddress import IPv4Network
from typing import Annotated

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictInt

from sliceportal.schemas.common import Name, ORMModel, Version, plain_text


class TenantBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    vni: StrictInt = Field(ge=1, le=16_777_215, description="VXLAN network identifier marking the tenant on the wire")
    vlan: StrictInt | None = Field(None, ge=1, le=4094)
    ue_pool: IPv4Network | None = Field(None, description="CIDR every subscriber address must lie in")
    contact: Annotated[str, AfterValidator(plain_text)] | None = Field(None, max_length=200)
    description: str = Field("", max_length=2000)


class TenantCreate(TenantBase):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "mvno-red",
                    "vni": 5001,
                    "vlan": 100,
                    "ue_pool": "10.45.0.0/16",
                    "contact": "noc@red.example",
                    "description": "MVNO red",
                }
            ]
        },
    )


class TenantUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    vni: StrictInt | None = Field(None, ge=1, le=16_777_215)
    vlan: StrictInt | None = Field(None, ge=1, le=4094)
    ue_pool: IPv4Network | None = None
    contact: Annotated[str, AfterValidator(plain_text)] | None = Field(None, max_length=200)
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
