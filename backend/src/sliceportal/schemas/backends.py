"""Backends at the API edge: the record's shape, and where its options may point.

Driver options are validated twice: here, by the portal's policy — no option names a server
file, and a backend's ``address`` must lie in the operator's allow-list of networks (a Unix
socket only under the portal's run directory) — and then by the driver's own typed schema
(``describe`` constructs the driver, whose pydantic options model forbids unknown fields).
"""

from __future__ import annotations

import ipaddress
import posixpath
from contextvars import ContextVar
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator
from pydantic_core import InitErrorDetails, PydanticCustomError

from sliceportal.core.config import DEFAULT_BACKEND_NETWORKS, DEFAULT_DATA_DIR, Settings
from sliceportal.core.redaction import REDACTED, redact_options
from sliceportal.schemas.common import Name, ORMModel, Version

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class BackendPolicy:
    """Where backends registered through the API may point (settings: backend_networks, run_dir)."""

    networks: tuple[Network, ...] = field(
        default_factory=lambda: tuple(ipaddress.ip_network(n) for n in DEFAULT_BACKEND_NETWORKS)
    )
    run_dir: Path = DEFAULT_DATA_DIR / "run"

    @classmethod
    def of(cls, settings: Settings) -> BackendPolicy:
        return cls(tuple(settings.backend_networks), Path(settings.run_dir))


# Set per request by the app (api/middleware.py) from its settings; the default is the
# settings' defaults, for code that validates outside a request.
BACKEND_POLICY: ContextVar[BackendPolicy | None] = ContextVar("backend_policy", default=None)

_PATH_PREFIXES = ("/", "~", "./", "../", "file:")


def _looks_like_path(value: str) -> bool:
    return value.startswith(_PATH_PREFIXES) or "/../" in value or value == ".."


def _address_error(value: str, policy: BackendPolicy) -> str | None:
    """Why ``value`` may not be a backend address, or None when it may."""
    if value.startswith(("unix:", "/")):
        path = value.removeprefix("unix:")
        run_dir = str(policy.run_dir)
        if posixpath.normpath(path) != path or posixpath.commonpath([path, run_dir]) != run_dir:
            return f"a Unix socket address must lie under the portal's run directory {run_dir}"
        return None
    rest = value.removeprefix("tcp:")
    host, sep, port = rest.rpartition(":")
    if not sep or not port.isdigit() or not 1 <= int(port) <= 65535:
        return "an address is HOST:PORT (or tcp:HOST:PORT) with a port in 1..65535"
    host = host.removeprefix("[").removesuffix("]")
    if host == "localhost":
        host = "127.0.0.1"
    try:
        ip = ipaddress.ip_address(host)
    except ValueError:
        # Names are not resolved: DNS could point an allowed name anywhere later.
        return f"the host {host!r} must be an IP address (or localhost)"
    if not any(ip in net for net in policy.networks):
        allowed = ", ".join(str(n) for n in policy.networks)
        return f"{ip} is outside the networks backends may use ({allowed}); an operator widens backend_networks"
    return None


def _walk(value: Any, loc: tuple[str | int, ...]) -> list[tuple[tuple[str | int, ...], str]]:
    """Every string in an options value, with where it is."""
    if isinstance(value, str):
        return [(loc, value)]
    if isinstance(value, dict):
        return [hit for k, v in value.items() for hit in _walk(v, (*loc, str(k)))]
    if isinstance(value, list | tuple):
        return [hit for i, v in enumerate(value) for hit in _walk(v, (*loc, i))]
    return []


def check_options(options: dict[str, Any], policy: BackendPolicy | None = None) -> dict[str, Any]:
    """Refuse options that name server files or point outside the allow-list (422 per field)."""
    policy = policy or BACKEND_POLICY.get() or BackendPolicy()
    errors: list[InitErrorDetails] = []
    for loc, text in _walk(options, ()):
        if loc == ("address",):
            why = _address_error(text, policy)
        elif _looks_like_path(text):
            why = (
                "server paths are not accepted in backend options: a driver uses its bundled artifacts "
                "(device config, P4Info, program) or content uploaded with the request"
            )
        else:
            continue
        if why:
            errors.append(InitErrorDetails(type=PydanticCustomError("backend_option", why), loc=loc, input=text))
    if errors:
        raise ValidationError.from_exception_data("options", errors)
    return options


class BackendBase(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name
    driver: str = Field(
        min_length=1,
        max_length=60,
        pattern=r"^[a-z0-9_-]+$",
        description="a driver registered under sliceportal.drivers",
    )
    options: dict[str, Any] = Field(
        default_factory=dict,
        description="driver options (address, interface ...); "
        "never server paths; addresses inside the allowed backend networks",
    )

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, Any]) -> dict[str, Any]:
        return check_options(v)


LinkBps = Annotated[int, Field(gt=0, le=10**13, description="egress link capacity in bit/s (admission control)")]
PortBps = Annotated[
    dict[Annotated[str, Field(min_length=1, max_length=32)], LinkBps],
    Field(max_length=64, description="per-port capacity in bit/s, port name -> bit/s"),
]


Unenforced = Annotated[
    list[Literal["rate_limit", "ecn", "match_dscp", "match_dst_port"]],
    Field(
        max_length=4,
        description="SLA capabilities the data plane lacks that the operator accepts it carries "
        "unenforced (listed in the preview); empty: slices asking for them are refused",
    ),
]


class BackendCreate(BackendBase):
    model_config = ConfigDict(
        extra="forbid",
        json_schema_extra={
            "examples": [
                {
                    "name": "edge-p4",
                    "driver": "p4rt",
                    "options": {"address": "10.200.0.5:9559", "lanes": 8, "trunk_ports": [1, 2], "uplink_port": 2},
                    "link_bps": 10000000000,
                }
            ]
        },
    )
    link_bps: LinkBps | None = Field(None, description="egress link capacity in bit/s; default 10 Gbit/s")
    port_bps: PortBps = Field(default_factory=dict)
    accept_unenforced: Unenforced = Field(default_factory=list)


class BackendUpdate(BaseModel):
    model_config = ConfigDict(extra="forbid")
    name: Name | None = None
    options: dict[str, Any] | None = None
    link_bps: LinkBps | None = None
    port_bps: PortBps | None = None
    accept_unenforced: Unenforced | None = None
    version: Version = None

    @field_validator("options")
    @classmethod
    def _options(cls, v: dict[str, Any] | None) -> dict[str, Any] | None:
        return None if v is None else check_options(v)


class BackendPublic(ORMModel):
    id: int
    name: str
    driver: str
    options: dict[str, Any] = Field(
        description=f"driver options; secrets (names ending in _token, _secret, "
        f"_password) read {REDACTED!r}, and sent back as such keep their value"
    )
    paths: int
    lanes: int
    capacity: dict[str, int]
    link_bps: int = Field(description="egress link capacity in bit/s: what admission control checks against")
    port_bps: dict[str, int]
    accept_unenforced: list[str]
    health: str
    health_detail: str
    version: int
    created_at: datetime

    @field_validator("options", mode="after")
    @classmethod
    def _hide_secrets(cls, v: dict[str, Any]) -> dict[str, Any]:
        return redact_options(v)
