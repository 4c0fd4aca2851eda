"""The backend options this driver accepts (the portal's Backend record, validated here)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from sliceportal.drivers.contract import OptionsError


class NetfpgaOptions(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    address: str = Field(description="control socket: a Unix socket path, unix:PATH or tcp:HOST:PORT")
    paths: int = Field(8, ge=1, le=256, description="round-robin paths the bitstream was built with")
    lanes: int = Field(4, ge=1, le=8, description="priority lanes per path")
    capacity: int = Field(64, ge=1, le=1024, description="TCAM entries per bank")
    timeout_s: float = Field(30.0, gt=0)
    batch: int = Field(128, ge=1, description="register writes per pipelined batch (progress granularity)")

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
            raise OptionsError(f"invalid netfpga backend options: {e}", hint="fix the backend's options") from e
