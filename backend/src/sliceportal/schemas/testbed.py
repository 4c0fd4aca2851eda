"""The live testbed as the API shows it: per backend, its links, load, congestion and state."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict, Field


class TestbedLink(BaseModel):
    __test__ = False

    role: str = Field(description="ingress (where the subscribers' traffic enters) or egress (where it is measured)")
    netns: str
    ifname: str


class DefaultLane(BaseModel):
    """Traffic a data plane put on its miss path: no deployed slice's rule matched it."""

    lane: int = Field(description="the data plane's own (target) lane its miss path chose")
    rx_packets: int
    throughput_bps: float
    loss_pct: float
    from_slices: list[int] = Field(
        description="portal slices whose subscribers sent it (their rules are "
        "not in the rule set this data plane holds)"
    )


class TestbedBackend(BaseModel):
    __test__ = False

    backend_id: int
    name: str
    driver: str
    up: bool = Field(description="the data plane's process / links are there and forward")
    reason: str = Field(description="why it is down, or why its start-up deploy failed; empty when fine")
    links: list[TestbedLink]
    rule_set_id: int | None = Field(
        description="the rule set it holds (last finished deployment), which decides where each flow lands"
    )
    flows: int = Field(description="subscriber flows sent to it (slices assigned to this backend)")
    offered_pps: float = Field(description="packets/s sent to it now (congestion included)")
    offered_bps: float
    congestion_until: datetime | None = Field(description="end of a running congestion scenario")
    congestion_factor: float | None
    egress_capacity_bps: float | None = Field(
        description="the data plane's egress capacity in force: its link / drain / budget rate; a congestion "
        "scenario lowers it to offered_bps / congestion_factor; null: not limited"
    )
    congestion_mechanism: str = Field(
        description="what a congestion scenario caps on this data plane and how its lanes are told apart there"
    )
    restarts: int = Field(description="times the watchdog restarted its data-plane process")
    last_interval_at: datetime | None = Field(description="end of the last interval its egress meter saw packets")
    default_traffic: list[DefaultLane]
    placement_check: str = Field(
        description="whether the data plane's own per-slice and miss counters agree "
        "with where the KPIs attribute its traffic: agrees / differs: … / "
        "not checked yet"
    )


class TestbedState(BaseModel):
    __test__ = False

    running: bool
    error: str = ""
    prefix: str
    backends: list[TestbedBackend]


class CongestionCreate(BaseModel):
    model_config = ConfigDict(json_schema_extra={"examples": [{"backend_id": 2, "duration_s": 30, "factor": 4}]})
    backend_id: int = Field(gt=0)
    duration_s: float = Field(ge=5, le=600, description="how long the backend stays overloaded")
    factor: float = Field(
        4.0,
        gt=1,
        le=50,
        description="overload while it runs: the backend's egress capacity drops to its offered load / factor",
    )


class CongestionStarted(BaseModel):
    backend_id: int
    factor: float
    offered_pps: float
    egress_capacity_bps: float = Field(description="the capacity while it runs: offered bit rate / factor")
    until: datetime
