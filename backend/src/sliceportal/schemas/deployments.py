from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.schemas.common import ORMModel


class TableUsagePublic(BaseModel):
    used: int
    capacity: int


class CounterexamplePublic(BaseModel):
    key: dict[str, int] = Field(
        description="one key both sides classify differently, field by field "
        "(has_vni / has_teid / has_vlan = 1: the header is present)"
    )
    ir: str = Field(description="what the compiled IR decides for the key")
    plane: str = Field(description="what the lowered plan decides for it")


class EquivalencePublic(BaseModel):
    """Whether the lowered plan classifies every key exactly as the IR (issue #20, docs/packets.md)."""

    verdict: Literal["proven", "differs", "unchecked"]
    method: str
    checked_entries: int = Field(description="entries of the plan's ternary view compared with the IR's rules")
    cubes: int = Field(description="cubes of the key space the walk visited")
    elapsed_ms: float
    counterexample: CounterexamplePublic | None
    detail: str


class EnforcementGapPublic(BaseModel):
    slice_id: int
    slice_name: str
    field: str = Field(description="the slice's API field, e.g. sla.ecn_delay_ms")
    capability: str = Field(description="what the data plane lacks: rate_limit, ecn, match_dscp, match_dst_port")
    backend_id: int
    backend_name: str
    driver: str
    accepted: bool
    message: str


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
    equivalence: EquivalencePublic | None = Field(
        None, description="the plan proven equal to the IR on every key, or why not (unchecked / counterexample)"
    )
    enforcement: list[EnforcementGapPublic] = Field(
        default_factory=list,
        description="SLA attributes this backend cannot enforce, each accepted by an operator "
        "on the backend (accept_unenforced); any other such attribute refuses the preview with 422",
    )


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
    # the job record (issue #26; docs/api.md "Deployments are jobs")
    runner: str = Field("", description="host:pid of the process that started the push")
    heartbeat_at: datetime | None = Field(
        None,
        description="renewed every second while the push runs; "
        "stale: its runner died and the leading controller finishes it",
    )
    progress: dict[str, Any] | None = Field(
        None, description="the push's latest progress event (phase, done, total, message)"
    )
    resumed_by: str = Field(
        "",
        description="host:pid of the controller that finished the push after "
        "its runner died; empty when the runner finished it",
    )


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
    model_config = ConfigDict(extra="forbid", json_schema_extra={"examples": [{"rule_set": 3}]})
    rule_set: int = Field(ge=1, le=2**31 - 1, description="the rule-set number to return to")


class SliceDeployBackendPublic(BaseModel):
    backend_id: int
    backend_name: str
    where: Literal["new", "previous", "unchanged", "refused"] = Field(
        description="the rule set the backend is on now: the new one, the previous one (its push failed and "
        "was rolled back), unchanged (already in force), or refused before any write"
    )
    status: str = Field(description="succeeded / failed / unchanged / refused")
    rule_set: int | None = Field(description="the number of the rule set in force on the backend now")
    deployment_id: int | None
    error: str


class SliceDeployPublic(BaseModel):
    """The outcome of deploying one slice to every backend it is assigned to (in parallel)."""

    slice_id: int
    ok: bool = Field(description="every backend is on the new rule set or unchanged")
    backends: list[SliceDeployBackendPublic]
