"""The backend options this driver accepts (the portal's Backend record, validated here).

The address is typed: ``tcp:HOST:PORT`` (HOST an IP address or ``localhost``) or a Unix
socket (``unix:/abs/path.sock`` or ``/abs/path.sock``). Where a portal lets backends point is
its own policy (an allow-list of networks; sockets only under its run directory), applied
where the API receives the options; this schema only fixes their form.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, StrictInt, ValidationError, field_validator

from sliceportal.drivers.addresses import UnixAddress, check_address, parse_address
from sliceportal.drivers.contract import OptionsError


class NetfpgaOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(
        min_length=1, max_length=200, description="control socket: tcp:HOST:PORT, or a Unix socket unix:/PATH.sock"
    )
    agent_token: str | None = Field(
        None,
        min_length=16,
        max_length=1024,
        pattern=r"^[!-~]+$",
        description="the token of an agent started with sp_sim --token-file "
        "(sent as its connection's first line, AUTH <token>)",
    )
    paths: StrictInt = Field(8, ge=1, le=256, description="round-robin paths the bitstream was built with")
    lanes: StrictInt = Field(4, ge=1, le=8, description="priority lanes per path")
    capacity: StrictInt = Field(64, ge=1, le=1024, description="TCAM entries per bank")
    timeout_s: float = Field(
        30.0,
        gt=0,
        le=60,
        allow_inf_nan=False,
        description="per register transaction; bounded so that an unreachable card cannot hold a worker",
    )
    batch: StrictInt = Field(128, ge=1, le=4096, description="register writes per pipelined batch")
    clock_hz: StrictInt = Field(
        200_000_000,
        ge=1_000_000,
        le=1_000_000_000,
        description="clock the bitstream runs at (checked against its CLOCK_HZ "
        "register): turns rate limits into bytes per cycle",
    )
    rate_slices: StrictInt = Field(
        64,
        ge=2,
        le=256,
        description="rate-limiter buckets the bitstream has (slice ids 1..rate_slices-1 can be limited)",
    )

    @field_validator("address")
    @classmethod
    def _address(cls, v: str) -> str:
        return check_address(v, unprefixed="unix")

    def unix_socket(self) -> str | None:
        """The socket path when the address is a Unix socket."""
        where = parse_address(self.address, unprefixed="unix")
        return where.path if isinstance(where, UnixAddress) else None

    @field_validator("paths", "lanes")
    @classmethod
    def _power_of_two(cls, v: int) -> int:
        if v & (v - 1):
            raise ValueError("must be a power of two")
        return v

    @classmethod
    def parse(cls, options: Mapping[str, Any]) -> NetfpgaOptions:
        try:
            return cls.model_validate(dict(options))
        except ValidationError as e:
            raise OptionsError.from_validation("netfpga", e) from None
