"""Intent shapes (seed 001 §5): what was asked, and the entries it produced per backend."""

from __future__ import annotations

from datetime import datetime
from typing import Any, Literal

from pydantic import BaseModel, Field

from sliceportal.schemas.deployments import DeploymentPublic


class IntentMatch(BaseModel):
    imsis: list[str] = Field(description="UEs by IMSI; every selector given must hold")
    ue_prefixes: list[str] = Field(description="UE addresses / prefixes (innermost source IPv4)")
    teids: list[int] = Field(description="GTP-U TEIDs; keyed on data planes that match TEIDs")
    dst_ports: list[tuple[int, int]] = Field(description="inclusive innermost destination port ranges; [] = any")
    dscp: list[int] = Field(description="innermost DSCP values; [] = any")
    protocol: str = Field(description="'any' (the data planes cannot key on the L4 protocol)")


class IntentAction(BaseModel):
    type: Literal["prioritise", "steer", "rate_limit", "drop"]
    lane: int | None = Field(description="catalogue lane 0-7 (prioritise; steer keeps the services' lanes if null)")
    rr_path: int | None = Field(description="steer: the RR path the flows take")
    rate_mbps: float | None


class IntentPublic(BaseModel):
    id: int
    tenant_id: int
    slice_id: int
    owner: str
    created_at: datetime
    version: int
    source_format: Literal["listing1", "native"]
    source: dict[str, Any] = Field(description="the message as posted")
    match: IntentMatch
    action: IntentAction


class IntentRule(BaseModel):
    index: int = Field(
        description="position in the backend's rule list: lower wins (TCAM row / P4 priority rank / XDP rule bit)"
    )
    match: dict[str, dict[str, int]] = Field(description="field -> {value, mask}; absent fields are wildcards")
    action: dict[str, int] = Field(description="slice_id, lane and rr_path on that backend")


class IntentPolicer(BaseModel):
    slice_id: int = Field(description="the intent's sub-slice: a data-plane slice id of its own (docs/rules.md)")
    rate_bps: int = Field(description="its policer's rate; 0 = drop every frame")
    burst_ms: float | None = Field(description="its bucket depth in ms of the rate")


class IntentCounters(BaseModel):
    packets: int = Field(description="frames of the intent's flows the data plane counted (monotonic)")
    drops: dict[str, int] = Field(description="of those, dropped by the intent's policer, by reason")


class IntentBackendEntries(BaseModel):
    backend_id: int
    backend: str
    driver: str
    rule_set: int | None = Field(description="number of the rule set in force; null = nothing deployed yet")
    rules: list[IntentRule] = Field(description="the entries this intent produced in the rule set in force")
    policer: IntentPolicer | None = Field(None, description="rate_limit / drop: the sub-slice enforcing it there")
    counters: IntentCounters | None = Field(
        None, description="read from the data plane now; null when it cannot answer (down, a push under way)"
    )


class IntentDetail(IntentPublic):
    entries: list[IntentBackendEntries] = Field(description="derived from each backend's rule set in force")


class IntentRefusedPush(BaseModel):
    backend_id: int
    detail: str


class IntentResult(BaseModel):
    """What POST /intents did: the intent created (or deleted) and each backend's push."""

    operation: Literal["insert", "delete"]
    intents: list[IntentPublic] = Field(description="the intent created, or those a DELETE message removed")
    deployments: list[DeploymentPublic]
    refused: list[IntentRefusedPush] = Field(
        default_factory=list,
        description="backends that could not take the push now (down, busy); "
        "the intent stays and their next deploy carries it",
    )
