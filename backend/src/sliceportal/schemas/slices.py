from __future__ import annotations

from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from sliceportal.models.slicing import PathMode
from sliceportal.schemas.common import DbId, Name, ORMModel, Version

MAX_SLICE_BACKENDS = 1024

Mbps = Annotated[float, Field(gt=0, le=1_000_000)]
Ms = Annotated[float, Field(gt=0, le=60_000)]
Lane = Annotated[int, Field(ge=0, le=7, description="catalogue priority lane (seed 000 Table 1), 7 highest")]
Port = Annotated[int, Field(ge=0, le=65535)]
Dscp = Annotated[int, Field(ge=0, le=63)]


class PortRange(BaseModel):
    model_config = ConfigDict(extra="forbid")
    lo: Port
    hi: Port

    @model_validator(mode="after")
    def _ordered(self) -> PortRange:
        if self.lo > self.hi:
            raise ValueError(f"lo {self.lo} is above hi {self.hi}")
        return self


class ServiceClassBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    lane: Lane
    dst_ports: list[PortRange] = Field(default_factory=list, max_length=64, description="empty = any port")
    dscp: list[Dscp] = Field(default_factory=list, max_length=64, description="empty = any DSCP")
    protocol: Literal["any", "udp", "tcp"] = "any"


class ServiceClassCreate(ServiceClassBase):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [{"name": "voice", "lane": 6, "dst_ports": [{"lo": 5060, "hi": 5061}], "protocol": "udp"}]
        },
    )


class ServiceClassUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    lane: Lane | None = None
    dst_ports: list[PortRange] | None = Field(None, max_length=64)
    dscp: list[Dscp] | None = Field(None, max_length=64)
    protocol: Literal["any", "udp", "tcp"] | None = None
    version: Version = None


class ServiceClassPublic(ORMModel):
    id: int
    slice_id: int
    name: str
    lane: int
    dst_ports: list[PortRange]
    dscp: list[int]
    protocol: str
    version: int

    @field_validator("dst_ports", mode="before")
    @classmethod
    def _pairs(cls, v: object) -> object:
        # stored as [[lo, hi], ...] (JSONB)
        if isinstance(v, list):
            return [{"lo": r[0], "hi": r[1]} if isinstance(r, list | tuple) else r for r in v]
        return v


class Sla(BaseModel):
    model_config = ConfigDict(extra="forbid")
    guaranteed_mbps: Mbps | None = None
    rate_limit_mbps: Mbps | None = None
    max_delay_ms: Ms | None = Field(None, description="burst limit: drop above this queueing delay")
    ecn_delay_ms: Ms | None = Field(None, description="ECN-mark above this queueing delay")
    max_loss_pct: Annotated[float, Field(ge=0, le=100)] | None = None
    max_jitter_ms: Ms | None = None

    @model_validator(mode="after")
    def _consistent(self) -> Sla:
        if self.guaranteed_mbps and self.rate_limit_mbps and self.guaranteed_mbps > self.rate_limit_mbps:
            raise ValueError("guaranteed_mbps cannot exceed rate_limit_mbps")
        if self.ecn_delay_ms and self.max_delay_ms and self.ecn_delay_ms > self.max_delay_ms:
            raise ValueError("ecn_delay_ms cannot exceed max_delay_ms")
        return self


class SliceBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    tenant_id: DbId
    slice_type_id: DbId
    description: str = Field("", max_length=2000)
    sla: Sla = Field(default_factory=Sla)
    path_mode: PathMode = PathMode.PER_SLICE
    # a slice may span a fleet (bench/scale_backends.py deploys one to 100 backends)
    backend_ids: list[DbId] = Field(default_factory=list, max_length=MAX_SLICE_BACKENDS)


class SliceCreate(SliceBase):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "red-embb",
                    "tenant_id": 1,
                    "slice_type_id": 2,
                    "description": "video for red's subscribers",
                    "sla": {
                        "guaranteed_mbps": 50,
                        "rate_limit_mbps": 200,
                        "max_delay_ms": 20,
                        "ecn_delay_ms": 5,
                        "max_loss_pct": 1,
                    },
                    "backend_ids": [1],
                    "services": [
                        {
                            "name": "video",
                            "lane": 2,
                            "dst_ports": [{"lo": 5000, "hi": 5010}],
                            "dscp": [34],
                            "protocol": "udp",
                        }
                    ],
                }
            ]
        },
    )
    services: list[ServiceClassCreate] = Field(default_factory=list, max_length=64)


class SliceUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    slice_type_id: DbId | None = None
    description: str | None = Field(None, max_length=2000)
    sla: Sla | None = None
    path_mode: PathMode | None = None
    backend_ids: list[DbId] | None = Field(None, max_length=MAX_SLICE_BACKENDS)
    version: Version = None


DeployStateName = Literal["draft", "pending", "deployed", "out_of_sync", "failed", "not_deployed"]
SlaStateName = Literal["met", "degraded", "no_data"]
SliceSummaryState = Literal["draft", "pending", "deployed", "degraded", "out_of_sync", "failed", "not_deployed"]


class SliceBackendSummary(BaseModel):
    backend_id: int
    backend_name: str
    state: DeployStateName
    sla: SlaStateName
    rule_set_number: int | None


class OpenViolation(BaseModel):
    id: int
    lane: int | None
    metric: str
    threshold: float
    worst: float
    started_at: datetime


class SliceBackendStatus(SliceBackendSummary):
    """A slice on one backend, derived from facts (docs/kpis.md)."""

    detail: str = Field(description="why this state, in words")
    since: datetime | None = Field(description="when the rule set in force was pushed")
    changes: list[str] = Field(description="pending: what a push would change for this slice")
    sync_state: str = Field(
        description="what the last reconcile read back: unknown / in_sync / out_of_sync / unreachable"
    )
    sync_detail: dict[str, Any] = Field(description="out_of_sync: the drift reconcile found")
    synced_at: datetime | None
    open_violations: list[OpenViolation]
    last_sample_at: datetime | None


class SliceStatusPublic(BaseModel):
    slice_id: int
    state: SliceSummaryState
    backends: list[SliceBackendStatus]


class StateCount(BaseModel):
    state: SliceSummaryState
    count: int


class SlicePublic(ORMModel):
    id: int
    name: str
    tenant_id: int
    slice_type_id: int
    slice_type_name: str
    lanes: list[int]
    description: str
    sla: Sla
    path_mode: PathMode
    state: SliceSummaryState = Field(
        description="derived: the most urgent of the per-backend states, see GET /slices/{id}/status"
    )
    backend_ids: list[DbId]
    status: list[SliceBackendSummary] = Field(description="per backend it is assigned to: deployment and SLA state")
    services: list[ServiceClassPublic]
    version: int
    created_at: datetime
    updated_at: datetime
