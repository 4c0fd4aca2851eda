"""Shapes shared by every resource: list pages, list parameters, versions."""

from __future__ import annotations

from typing import Annotated, Generic, TypeVar

from fastapi import Path, Query
from pydantic import BaseModel, ConfigDict, Field

T = TypeVar("T")


class Page(BaseModel, Generic[T]):
    data: list[T]
    count: int = Field(description="total matching objects, independent of offset / limit")


class ORMModel(BaseModel):
    model_config = ConfigDict(from_attributes=True)


class ListParams(BaseModel):
    offset: int = Field(0, ge=0, le=10_000_000)
    limit: int = Field(50, ge=1, le=500)
    sort: str | None = Field(None, max_length=64, description="field name, '-' prefix for descending")
    q: str | None = Field(None, max_length=200, pattern=r"^[^\x00]*$", description="case-insensitive search")


ListQuery = Annotated[ListParams, Query()]

Name = Annotated[str, Field(min_length=1, max_length=120, pattern=r"^[^\x00-\x1f]+$")]
Version = Annotated[int | None, Field(None, ge=1, description="the version read; or send If-Match")]

MAX_ID = 2**63 - 1  # BIGINT primary keys
DbId = Annotated[int, Field(ge=1, le=MAX_ID)]
PathId = Annotated[int, Path(ge=1, le=MAX_ID)]
QueryId = Annotated[int | None, Query(ge=1, le=MAX_ID)]
