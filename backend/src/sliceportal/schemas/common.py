"""Shapes shared by every resource: list pages, list parameters, versions."""

from __future__ import annotations

import unicodedata
from typing import Annotated, Generic, TypeVar

from fastapi import Path, Query
from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, StrictInt

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

# Characters that make a name display as something it is not: bidi overrides / isolates (the
# "Trojan Source" trick), zero-width and other invisible format characters (category Cf).
_DECEPTIVE = {"Cf", "Cc", "Cs", "Co", "Cn"}


def _strip(value: object) -> object:
    return value.strip() if isinstance(value, str) else value


def plain_text(value: str) -> str:
    bad = sorted({f"U+{ord(c):04X}" for c in value if unicodedata.category(c) in _DECEPTIVE})
    if bad:
        raise ValueError(f"contains invisible or direction-changing characters ({', '.join(bad)})")
    return unicodedata.normalize("NFC", value)


# Names are stripped, never blank, and hold only visible text.
Name = Annotated[str, BeforeValidator(_strip), Field(min_length=1, max_length=120), AfterValidator(plain_text)]
Version = Annotated[StrictInt | None, Field(None, ge=1, le=2**31 - 1, description="the version read; or send If-Match")]

MAX_ID = 2**63 - 1  # BIGINT primary keys
# Strict: an id is a JSON integer, not true, 1.0 or "1"
DbId = Annotated[StrictInt, Field(ge=1, le=MAX_ID)]
PathId = Annotated[int, Path(ge=1, le=MAX_ID)]
QueryId = Annotated[int | None, Query(ge=1, le=MAX_ID)]
