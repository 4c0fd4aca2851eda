"""The options of one XDP backend (the portal's Backend record), validated at the edge.

No option names a file on the server: the program is always the bundled build
(``find_object``), and interfaces / namespaces are kernel names, checked as such.
"""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    IPvAnyAddress,
    StrictBool,
    StrictInt,
    field_validator,
    model_validator,
)

from sliceportal.drivers.addresses import check_address

from . import layout

# Kernel names: an interface name is at most 15 bytes (IFNAMSIZ - 1); a netns name is a file
# name under /run/netns, so no slash and no leading dot (which would allow "..").
IfName = Annotated[str, Field(min_length=1, max_length=15, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.:-]*$")]
NetnsName = Annotated[str, Field(min_length=1, max_length=64, pattern=r"^[A-Za-z0-9_][A-Za-z0-9_.-]*$")]
# every number bounded (#27): a lane is a slot of the lane table, a CPU an index the kernel's
# cpumap takes (NR_CPUS is at most 8192)
Lane = Annotated[int, Field(ge=0, lt=layout.MAX_LANES)]
Cpu = Annotated[int, Field(ge=0, lt=8192)]


class XdpOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    interface: IfName | None = Field(None, description="device to attach to; None = load only (test runs)")
    netns: NetnsName | None = Field(None, description="network namespace of the interface (ip netns name)")
    mode: Literal["native", "generic"] = "native"
    tx_peer: str | None = Field(
        None,
        pattern=r"^([A-Za-z0-9_][A-Za-z0-9_.-]{0,63}/)?[A-Za-z0-9_][A-Za-z0-9_.:-]{0,14}$",
        description="veth only: the peer of `interface` as 'netns/ifname' (or 'ifname'); gets an "
        "XDP_PASS program, without which veth drops XDP_TX frames",
    )
    lanes: StrictInt = Field(4, description="priority lanes the IR is compiled for")
    paths: StrictInt = Field(8, description="RR paths the IR is compiled for")
    lane_cpus: dict[Lane, Cpu] = Field(default_factory=dict, description="lane -> CPU; default lane % CPUs")
    alt_lanes: frozenset[Lane] = Field(frozenset(), description="lanes that are not prioritised")
    misses_to_alt: StrictBool = Field(True, description="rule misses are not prioritised (seed 001)")
    steer: Literal["cpumap", "pass"] = Field("cpumap", description="how a prioritised lane reaches its CPU")
    cpumap_qsize: int = Field(2048, ge=1, le=16384)
    lane_capacity_pps: dict[int, Annotated[int, Field(ge=1, le=10**9)]] = Field(
        default_factory=dict,
        description="prioritised lane -> packets/s its CPU takes (the most: the rate backs off while its "
        "cpumap queue still overflows); with 3/4 of cpumap_qsize as burst, the overflow beyond it goes to "
        "the alt node (counted) instead of being dropped at a full queue",
    )
    alt_mac: str | None = Field(None, description="MAC of the alternative node")
    alt_ip: IPvAnyAddress | None = Field(None, description="IPv4 of the alternative node")
    src_mac: str | None = Field(None, description="source MAC for XDP_TX; default: the interface's")
    capacity: dict[str, int] = Field(default_factory=dict, description="src_ip/dst_ip/vni/teid/vlan sizes")
    overload_poll_s: float = Field(
        0.5, ge=0, le=3600, allow_inf_nan=False, description="overload detection period; 0 = off"
    )
    overload_busy: float = Field(
        0.9, gt=0, le=1, allow_inf_nan=False, description="CPU busy fraction that marks overload"
    )
    flow_cache: bool = Field(True, description="exact-match flow cache in front of the classifier")
    record_last: bool = Field(False, description="record every decision (tests only; costs ~2 ns)")
    pin_name: NetnsName | None = Field(
        None,
        description="pin the maps under /sys/fs/bpf/sliceportal/<pin_name> so the data plane outlives its "
        "loader and the next loader takes it over (the agent sets it; None = in-process, unpinned)",
    )
    address: str | None = Field(
        None,
        min_length=1,
        max_length=200,
        description="drive the data plane through its agent (python -m sliceportal_xdp.agent) at "
        "tcp:HOST:PORT (or HOST:PORT) or unix:/PATH.sock instead of in-process; the portal's allow-list "
        "of backend networks applies to it like to every backend address",
    )
    agent_token: str | None = Field(None, min_length=16, max_length=1024, description="the agent's bearer token")
    agent_timeout_s: float = Field(10.0, gt=0, le=300, allow_inf_nan=False, description="per request to the agent")

    @field_validator("address")
    @classmethod
    def _address(cls, v: str | None) -> str | None:
        return None if v is None else check_address(v, unprefixed="tcp")

    @model_validator(mode="after")
    def _agent(self) -> XdpOptions:
        if self.address is None:
            return self
        if self.agent_token is None:
            raise ValueError("agent_token: required with address")
        # the agent owns the kernel side: its own options name the interface
        local = [f for f in ("interface", "netns", "tx_peer", "pin_name") if getattr(self, f) is not None]
        if local:
            raise ValueError(f"{', '.join(local)}: set on the agent, not beside its address")
        return self

    @field_validator("lanes", "paths")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        if v < 1 or v & (v - 1):
            raise ValueError("must be a power of two")
        return v

    @field_validator("lanes")
    @classmethod
    def _lanes(cls, v: int) -> int:
        if v > layout.MAX_LANES:
            raise ValueError(f"at most {layout.MAX_LANES} lanes")
        return v

    @field_validator("paths")
    @classmethod
    def _paths(cls, v: int) -> int:
        if v * layout.MAX_LANES > layout.MAX_LANE_SLOTS:
            raise ValueError(f"at most {layout.MAX_LANE_SLOTS // layout.MAX_LANES} paths")
        return v

    @field_validator("lane_capacity_pps")
    @classmethod
    def _lane_capacity(cls, v: dict[int, int]) -> dict[int, int]:
        for lane in v:
            if not 0 <= lane < layout.MAX_LANES:
                raise ValueError(f"lane {lane} outside 0..{layout.MAX_LANES - 1}")
        return v

    @field_validator("alt_mac", "src_mac")
    @classmethod
    def _mac(cls, v: str | None) -> str | None:
        if v is not None:
            parts = v.split(":")
            if len(parts) != 6 or not all(len(p) == 2 and int(p, 16) >= 0 for p in parts):
                raise ValueError(f"not a MAC address: {v!r}")
        return v

    @field_validator("capacity")
    @classmethod
    def _capacity(cls, v: dict[str, int]) -> dict[str, int]:
        allowed = {"src_ip", "dst_ip", "vni", "teid", "vlan"}
        for k, n in v.items():
            if k not in allowed:
                raise ValueError(f"unknown table {k!r}; sizable: {sorted(allowed)}")
            if not 1 <= n <= 1 << 20:
                raise ValueError(f"{k}: size {n} outside 1..{1 << 20}")
        return v

    def table_capacity(self) -> dict[str, int]:
        base = {
            "rules": layout.MAX_RULES,
            "src_ip": layout.IP_PREFIXES,
            "dst_ip": layout.IP_PREFIXES,
            "vni": layout.TUNNEL_KEYS,
            "teid": layout.TUNNEL_KEYS,
            "vlan": layout.TUNNEL_KEYS,
            "slices": layout.MAX_SLICES - 1,
        }
        return base | self.capacity
