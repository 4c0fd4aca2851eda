from __future__ import annotations

from datetime import datetime
from ipaddress import IPv4Address
from typing import Annotated

from pydantic import BaseModel, ConfigDict, Field, StrictInt, field_validator

from sliceportal.schemas.common import DbId, ORMModel, Version

# 3-digit MCC + 2/3-digit MNC + MSIN: 14 or 15 digits in all (3GPP TS 23.003).
Imsi = Annotated[str, Field(pattern=r"^[0-9]{14,15}$", description="14-15 digit IMSI")]
GuaranteedBps = Annotated[
    StrictInt,
    Field(
        gt=0,
        le=10**13,
        description="this subscriber's own guaranteed rate in bit/s; admission control sums them per slice",
    ),
]
Teid = Annotated[StrictInt, Field(ge=1, le=4_294_967_295, description="GTP-U tunnel endpoint id (32 bit, 0 reserved)")]


def _unique(values: list[int]) -> list[int]:
    if len(set(values)) != len(values):
        raise ValueError("contains the same TEID twice")
    return values


class SubscriberBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    imsi: Imsi
    ue_ip: IPv4Address = Field(description="UE address: the innermost source address of its packets")
    teids: list[Teid] = Field(default_factory=list, max_length=16)
    slice_ids: list[DbId] = Field(default_factory=list, max_length=16)
    guaranteed_bps: GuaranteedBps | None = None

    _teids_unique = field_validator("teids")(_unique)


class SubscriberCreate(SubscriberBase):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {"tenant_id": 1, "imsi": "001010000000001", "ue_ip": "10.45.0.1", "teids": [1001], "slice_ids": [1]}
            ]
        },
    )
    tenant_id: DbId


class SubscriberUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    imsi: Imsi | None = None
    ue_ip: IPv4Address | None = None
    teids: list[Teid] | None = Field(None, max_length=16)
    slice_ids: list[DbId] | None = Field(None, max_length=16)
    guaranteed_bps: GuaranteedBps | None = Field(None, description="null clears it")
    version: Version = None

    @field_validator("teids")
    @classmethod
    def _teids(cls, v: list[int] | None) -> list[int] | None:
        return None if v is None else _unique(v)


class SubscriberPublic(ORMModel):
    id: int
    tenant_id: int
    imsi: str
    ue_ip: IPv4Address
    teids: list[int]
    slice_ids: list[int]
    guaranteed_bps: int | None = None
    version: int
    created_at: datetime


class ImportReport(BaseModel):
    imported: int
    rows: int
    duration_s: float


class SubscriberBulkDelete(BaseModel):
    """Which subscribers to delete: the same filter as the list (tenant, slice, search text).

    An empty filter would delete every subscriber one can see: it is refused unless ``all``
    says so explicitly. ``expected_count`` (the count the user confirmed) guards against a
    list that changed in between.
    """

    model_config = ConfigDict(
        extra="forbid", json_schema_extra={"examples": [{"tenant_id": 1, "slice_id": 3, "expected_count": 250}]}
    )
    tenant_id: DbId | None = None
    slice_id: DbId | None = None
    q: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        pattern=r"^[^\x00]*$",
        description="IMSI or UE address contains this text (as the list's search)",
    )
    all: bool = Field(False, description="true: an empty filter deletes every subscriber in scope")
    expected_count: int | None = Field(None, ge=0, description="refuse (409) when the filter matches another count")


class BulkDeleteReport(BaseModel):
    deleted: int
    filter: dict[str, int | str | bool | None] = Field(description="the filter as applied")
