from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.schemas.common import ORMModel


class TableUsagePublic(BaseModel):
    used: int
    capacity: int


class PreviewPublic(BaseModel):
    backend_id: int
    driver: str
    version: str = Field(description="digest of the compiled rules; what the data plane reports once deployed")
    lanes: int
    paths: int
    flows: int = Field(description="subscriber x service flows the rules stand for")
    rules_before: int = Field(description="one rule per flow, before ternary minimisation")
    rules_after: int
    usage: dict[str, TableUsagePublic]
    slices: list[dict[str, Any]] = Field(description="per slice: lane folding, RR path allocation and why")
    ir: dict[str, Any]
    tables: dict[str, list[dict[str, Any]]] = Field(description="native entries per data-plane table")


class DeployUnchangedPublic(BaseModel):
    """An identical redeploy: the compiled plan equals the rule set in force; nothing was pushed."""

    backend_id: int
    status: Literal["unchanged"] = "unchanged"
    rule_set: int = Field(description="the number of the rule set in force (already deployed)")
    digest: str
    detail: str


class DeploymentPublic(ORMModel):
    id: int
    backend_id: int
    rule_set_id: int
    previous_rule_set_id: int | None
    rule_set_number: int = Field(description="the rule set's number on this backend (what rollback takes)")
    previous_rule_set_number: int | None
    kind: str
    status: str
    actor: str
    diff: dict[str, Any]
    error: str
    rolled_back: bool | None
    created_at: datetime
    finished_at: datetime | None
    duration_s: float | None


class RuleSetPublic(ORMModel):
    id: int
    backend_id: int
    number: int
    digest: str
    created_at: datetime
    created_by: str
    explanation: dict[str, Any]
    plan: dict[str, Any]


class RollbackRequest(BaseModel):
    model_config = ConfigDict(extra="forbid")
    rule_set: int = Field(ge=1, le=2**31 - 1, description="the rule-set number to return to")
