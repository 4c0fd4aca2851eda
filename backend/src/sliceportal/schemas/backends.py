from __future__ import annotations

from datetime import datetime
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.schemas.common import Name, ORMModel, Version


class BackendBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    driver: str = Field(min_length=1, max_length=60, description="a driver registered under sliceportal.drivers")
    options: dict[str, Any] = Field(default_factory=dict, description="driver options (address, interface ...)")


class BackendCreate(BackendBase):
    pass


class BackendUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    options: dict[str, Any] | None = None
    version: Version = None


class BackendPublic(ORMModel):
    id: int
    name: str
    driver: str
    options: dict[str, Any]
    paths: int
    lanes: int
    capacity: dict[str, int]
    health: str
    health_detail: str
    version: int
    created_at: datetime
