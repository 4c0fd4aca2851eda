"""Intent messages (seed 001 §5, Listing 1) and our richer form, mapped to a domain change.

Listing 1 of seed 001::

    {"Resources": [{"resourceId": "F8A4C949", "encapsulationID1": "00000445", "encapsulationType1": "vxlan"},
                   {"resourceId": "B6E6B2B3", "encapsulationID2": "8894D0D4", "encapsulationType2": "gtp"},
                   {"resourceId": "5A07C580", "srcIP": "192.188.0.140", "dstPort": "5004"}],
     "Action": {"actionType": "INSERT", "actionName": "PRIO-QUEUE", "flow_hash": "E918D704", "rx_queue": "1"},
     "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}]}

Resources together describe one flow, outermost encapsulation first: the VXLAN id is the
tenant's VNI, the GTP id the UE's TEID (both hexadecimal, as printed), and the last
resource the innermost service (UE source address, destination port). The action says
what to do to that flow. (The listing as printed has a trailing comma after ``"5004"``,
which no JSON parser accepts; send it without.)

Both forms become one ``IntentChange`` -- which UEs (IMSI, UE address / prefix, TEID) and
services (ports, DSCP) of a tenant get which action (prioritise into a lane, steer to an RR
path, rate-limit, drop) -- that ``services.intents`` stores as an ``Intent`` and the compiler
turns into per-flow entries. Nothing here touches the database.
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator, model_validator

from sliceportal.rules.ir import CATALOGUE_LANES

IntentActionName = Literal["prioritise", "steer", "rate_limit", "drop"]

_ENCAP_KEY = re.compile(r"^encapsulation(ID|Type)(\d+)$")


class IntentError(ValueError):
    """The intent is malformed; ``errors`` lists each problem with its location."""

    def __init__(self, errors: list[dict[str, Any]]) -> None:
        self.errors = errors
        super().__init__("; ".join(f"{'.'.join(map(str, e['loc']))}: {e['msg']}" for e in errors))


class _Strict(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid", populate_by_name=True)


def _address_text(v: Any) -> Any:
    # pydantic would take an integer (or a bool) as an address; an intent spells addresses out.
    if v is not None and not isinstance(v, str):
        raise ValueError("an IPv4 address is written as a dotted string")
    return v


def _hex(value: str, bits: int, what: str) -> int:
    try:
        n = int(value, 16)
    except ValueError:
        raise ValueError(f"{what} {value!r} is not hexadecimal") from None
    if not 0 <= n < 1 << bits:
        raise ValueError(f"{what} {value!r} does not fit in {bits} bits")
    return n


class Encapsulation(_Strict):
    level: int = Field(ge=1, description="the n of encapsulationIDn: 1 = outermost")
    type: Literal["vxlan", "geneve", "gtp"]
    id: str = Field(pattern=r"^[0-9A-Fa-f]{1,8}$", description="hexadecimal, as in Listing 1")

    @property
    def value(self) -> int:
        bits = 32 if self.type == "gtp" else 24
        return _hex(self.id, bits, f"{self.type} id")

    @model_validator(mode="after")
    def _fits(self) -> Encapsulation:
        _ = self.value
        return self


class Resource(_Strict):
    """One entry of ``Resources``: encapsulation ids and / or innermost flow fields."""

    resource_id: str = Field(alias="resourceId", min_length=1, max_length=64)
    encapsulations: tuple[Encapsulation, ...] = ()
    src_ip: ipaddress.IPv4Network | None = Field(None, alias="srcIP")
    dst_ip: ipaddress.IPv4Address | None = Field(None, alias="dstIP")
    dst_port: Annotated[int, Field(ge=0, le=0xFFFF)] | None = Field(None, alias="dstPort")
    protocol: Literal["udp", "tcp"] | None = None
    dscp: Annotated[int, Field(ge=0, le=63)] | None = None

    @model_validator(mode="before")
    @classmethod
    def _collect_encapsulations(cls, data: Any) -> Any:
        """Turn the numbered ``encapsulationIDn`` / ``encapsulationTypen`` keys into a list."""
        if not isinstance(data, dict):
            return data
        rest: dict[str, Any] = {}
        levels: dict[int, dict[str, Any]] = {}
        for key, value in data.items():
            m = _ENCAP_KEY.match(key)
            if m:
                levels.setdefault(int(m.group(2)), {"level": int(m.group(2))})[m.group(1).lower()] = (
                    value.lower() if m.group(1) == "Type" and isinstance(value, str) else value
                )
            else:
                rest[key] = value
        if levels:
            rest["encapsulations"] = [levels[n] for n in sorted(levels)]
        return rest

    @field_validator("protocol", mode="before")
    @classmethod
    def _lower(cls, v: Any) -> Any:
        return v.lower() if isinstance(v, str) else v

    @field_validator("src_ip", "dst_ip", mode="before")
    @classmethod
    def _addresses_are_text(cls, v: Any) -> Any:
        return _address_text(v)


class ListingAction(_Strict):
    action_type: Literal["INSERT", "DELETE"] = Field(alias="actionType")
    action_name: Literal["PRIO-QUEUE"] = Field(alias="actionName")
    flow_hash: str | None = Field(None, pattern=r"^[0-9A-Fa-f]{1,8}$")
    rx_queue: Annotated[int, Field(ge=0, le=1023)] | None = None

    @field_validator("action_type", "action_name", mode="before")
    @classmethod
    def _upper(cls, v: Any) -> Any:
        return v.upper() if isinstance(v, str) else v


class Param(_Strict):
    name: str = Field(alias="paramName", min_length=1)
    value: str = Field(alias="paramValue")


class ListingIntent(_Strict):
    """Seed 001 Listing 1, exactly its keys."""

    resources: list[Resource] = Field(alias="Resources", min_length=1)
    action: ListingAction = Field(alias="Action")
    params: list[Param] = Field(default_factory=list, alias="Params")


class NativeIntent(_Strict):
    """Our own form: the same content with explicit names, ranges and a catalogue lane."""

    operation: Literal["insert", "delete"]
    action: IntentActionName = "prioritise"
    imsi: list[Annotated[str, Field(pattern=r"^[0-9]{5,15}$")]] = Field(default_factory=list, max_length=1000)
    tenant_vni: Annotated[int, Field(ge=0, lt=1 << 24)] | None = None
    teid: Annotated[int, Field(ge=0, lt=1 << 32)] | None = None
    ue: ipaddress.IPv4Network | None = None  # a UE (/32) or a block of UEs
    dst_ip: ipaddress.IPv4Address | None = None
    dst_ports: list[tuple[int, int]] = Field(default_factory=list)
    dscp: list[Annotated[int, Field(ge=0, le=63)]] = Field(default_factory=list)
    protocol: Literal["udp", "tcp"] | None = None
    lane: Annotated[int, Field(ge=0, lt=CATALOGUE_LANES)] | None = None
    rr_path: Annotated[int, Field(ge=0, lt=1024)] | None = None  # steer: the RR path the flows take
    rate_mbps: Annotated[float, Field(gt=0)] | None = None  # rate_limit
    slice_ref: int | None = None  # the slice the flows belong to (else the one their UEs are in)
    params: dict[str, str] = Field(default_factory=dict)

    @field_validator("ue", "dst_ip", mode="before")
    @classmethod
    def _addresses_are_text(cls, v: Any) -> Any:
        return _address_text(v)

    @field_validator("dst_ports")
    @classmethod
    def _ranges(cls, v: list[tuple[int, int]]) -> list[tuple[int, int]]:
        for lo, hi in v:
            if not 0 <= lo <= hi <= 0xFFFF:
                raise ValueError(f"port range {lo}-{hi} is not within 0..65535 with lo <= hi")
        return v


class IntentChange(_Strict):
    """What an intent asks for, in domain terms (no database ids except an explicit slice_ref)."""

    source: Literal["listing1", "native"]
    operation: Literal["insert", "delete"]
    action: IntentActionName = "prioritise"
    imsis: tuple[str, ...] = ()
    tenant_vni: int | None = None
    teid: int | None = None
    ue: ipaddress.IPv4Network | None = None
    dst_ip: ipaddress.IPv4Address | None = None
    dst_ports: tuple[tuple[int, int], ...] = ()
    dscp: tuple[int, ...] = ()
    protocol: Literal["udp", "tcp"] | None = None
    lane: int | None = Field(None, description="catalogue lane 0-7 the flow gets")
    rr_path: int | None = None
    rate_mbps: float | None = None
    rx_queue: int | None = Field(None, description="Listing 1's rx_queue, kept as sent")
    flow_hash: int | None = None
    slice_ref: int | None = None
    resource_ids: tuple[str, ...] = ()
    params: dict[str, str] = Field(default_factory=dict)

    @model_validator(mode="after")
    def _meaningful(self) -> IntentChange:
        if not (self.tenant_vni is not None or self.teid is not None or self.ue or self.dst_ports or self.imsis):
            raise ValueError("the intent selects no traffic: give a tenant VNI, TEID, UE address or port")
        if self.operation == "insert":
            if self.action == "prioritise" and self.lane is None:
                raise ValueError("an insert needs a priority: rx_queue (Listing 1) or lane (native)")
            if self.action == "steer" and self.rr_path is None:
                raise ValueError("steer needs rr_path, the RR path the flows take")
            if self.action == "rate_limit" and self.rate_mbps is None:
                raise ValueError("rate_limit needs rate_mbps")
        return self


def _from_listing(intent: ListingIntent) -> IntentChange:
    vni = teid = None
    flow: dict[str, Any] = {}
    for r in intent.resources:
        for enc in r.encapsulations:
            if enc.type == "gtp":
                if teid is not None:
                    raise ValueError("two GTP encapsulations: the TEID is ambiguous")
                teid = enc.value
            else:
                if vni is not None:
                    raise ValueError("two VXLAN / GENEVE encapsulations: the tenant VNI is ambiguous")
                vni = enc.value
        for name in ("src_ip", "dst_ip", "dst_port", "protocol", "dscp"):
            value = getattr(r, name)
            if value is not None:
                if name in flow and flow[name] != value:
                    raise ValueError(f"resources disagree on {name}")
                flow[name] = value
    rx_queue = intent.action.rx_queue
    if rx_queue is not None and rx_queue >= CATALOGUE_LANES and intent.action.action_type == "INSERT":
        raise ValueError(f"rx_queue {rx_queue} has no catalogue lane (0-{CATALOGUE_LANES - 1})")
    port = flow.get("dst_port")
    return IntentChange(
        source="listing1",
        operation="insert" if intent.action.action_type == "INSERT" else "delete",
        tenant_vni=vni,
        teid=teid,
        ue=flow.get("src_ip"),
        dst_ip=flow.get("dst_ip"),
        dst_ports=((port, port),) if port is not None else (),
        dscp=(flow["dscp"],) if "dscp" in flow else (),
        protocol=flow.get("protocol"),
        # Seed 001 steers a prioritised flow to rx queue n; the portal's equivalent is
        # catalogue lane n of the flow's slice (the lead maps it onto the slice type).
        lane=rx_queue,
        rx_queue=rx_queue,
        flow_hash=int(intent.action.flow_hash, 16) if intent.action.flow_hash else None,
        resource_ids=tuple(r.resource_id for r in intent.resources),
        params={p.name: p.value for p in intent.params},
    )


def _from_native(intent: NativeIntent) -> IntentChange:
    return IntentChange(
        source="native",
        operation=intent.operation,
        action=intent.action,
        imsis=tuple(intent.imsi),
        rr_path=intent.rr_path,
        rate_mbps=intent.rate_mbps,
        tenant_vni=intent.tenant_vni,
        teid=intent.teid,
        ue=intent.ue,
        dst_ip=intent.dst_ip,
        dst_ports=tuple(intent.dst_ports),
        dscp=tuple(intent.dscp),
        protocol=intent.protocol,
        lane=intent.lane,
        slice_ref=intent.slice_ref,
        params=intent.params,
    )


def _errors(e: ValidationError) -> list[dict[str, Any]]:
    return [{"loc": list(err["loc"]), "msg": err["msg"], "type": err["type"]} for err in e.errors()]


def parse_intent(payload: str | bytes | dict[str, Any]) -> IntentChange:
    """Parse either form (Listing 1 has a ``Resources`` key); raise ``IntentError`` if invalid."""
    if isinstance(payload, str | bytes):
        try:
            payload = json.loads(payload)
        except json.JSONDecodeError as e:
            raise IntentError([{"loc": ["body"], "msg": f"not JSON: {e}", "type": "json_invalid"}]) from e
    if not isinstance(payload, dict):
        raise IntentError([{"loc": ["body"], "msg": "an intent is a JSON object", "type": "dict_type"}])
    listing = "Resources" in payload
    try:
        if listing:
            return _from_listing(ListingIntent.model_validate(payload))
        return _from_native(NativeIntent.model_validate(payload))
    except ValidationError as e:
        raise IntentError(_errors(e)) from e
    except ValueError as e:  # consistency checks across resources
        raise IntentError([{"loc": ["Resources" if listing else "body"], "msg": str(e), "type": "value_error"}]) from e
