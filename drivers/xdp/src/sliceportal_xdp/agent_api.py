"""The XDP agent's wire format: the bodies both the agent and its client speak.

The contract's own models (NativePlan, ApplyResult, DataPlaneState, Counters,
Capabilities) travel as they are; this module adds what only the agent has.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.drivers.contract import ApplyResult, ProgressEvent

API = "/v1"


class _Body(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class AgentHealth(_Body):
    ok: bool
    detail: str
    backend: str
    version: str | None = Field(description="rule-set digest the live table copy holds")
    generation: int = Field(description="table switches so far; bit 0 = the live copy (A/B)")
    program_id: int | None = Field(description="kernel id of the attached program")
    adopted: bool = Field(description="this agent took over a pinned data plane")
    pin_dir: str
    uptime_s: float


class Applied(_Body):
    """An apply's result with the progress events the push reported, in order."""

    result: ApplyResult
    events: list[ProgressEvent]


class Ok(_Body):
    ok: bool = True


class EgressBudget(_Body):
    rate_bps: float | None = Field(None, gt=0, description="None lifts the budget")
    lanes: int = Field(ge=1, le=8)
    burst_s: float = Field(0.1, gt=0, le=10)


class Overload(_Body):
    cpus: list[int] | None = Field(None, description="None hands the marks back to detection")


ErrorKind = Literal["driver", "push", "unreachable", "options", "capacity", "unsupported", "geometry", "abi"]


class Problem(_Body):
    """RFC 9457 problem details, with the driver error's kind so the client raises the same type."""

    type: str = "about:blank"
    title: str
    status: int
    detail: str
    kind: ErrorKind = "driver"
    hint: str = ""
    rolled_back: bool | None = None
