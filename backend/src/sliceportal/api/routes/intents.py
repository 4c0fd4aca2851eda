"""The intent API: seed 001 Listing 1 messages (and our native form) onto the domain.

An intent names a flow (tenant VNI, GTP TEID, UE, service port / DSCP) and a priority.
It becomes a service class of the UE's slice (insert) or removes the one it created
(delete), and the slice's backends are redeployed through the same pipeline as any
operator edit. Listing 1's ``rx_queue`` n is read as the slice type's catalogue lane n
when the type has it, else as the n-th lane of the type (its n-th queue).
"""

from __future__ import annotations

from ipaddress import IPv4Network
from typing import Annotated, Any

from fastapi import APIRouter, Body
from pydantic import BaseModel
from sqlalchemy import any_, literal, select
from sqlalchemy.orm import Session

from sliceportal.api.deps import Deployer, SessionDep
from sliceportal.api.errors import ApiError, FieldError
from sliceportal.models import Backend, ServiceClass, Slice, Subscriber, Tenant
from sliceportal.rules.intents import IntentChange, IntentError, parse_intent
from sliceportal.schemas.deployments import DeploymentPublic
from sliceportal.services import deployments as svc

router = APIRouter(prefix="/intents", tags=["intents"])

LISTING_1 = {
    "Resources": [
        {"resourceId": "F8A4C949", "encapsulationID1": "000003E9", "encapsulationType1": "vxlan"},
        {"resourceId": "B6E6B2B3", "encapsulationID2": "003E9001", "encapsulationType2": "gtp"},
        {"resourceId": "5A07C580", "srcIP": "10.45.0.0", "dstPort": "5004"},
    ],
    "Action": {"actionType": "INSERT", "actionName": "PRIO-QUEUE", "flow_hash": "E918D704", "rx_queue": "1"},
    "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}],
}


IntentBody = Annotated[dict[str, Any], Body(openapi_examples={"listing1": {"value": LISTING_1}})]


class IntentResult(BaseModel):
    operation: str
    source: str
    slice_id: int
    service_class_id: int | None
    lane: int | None
    deployments: list[DeploymentPublic]


def _unprocessable(message: str, field: str) -> ApiError:
    return ApiError(422, "Intent cannot be applied", message, field=field)


def _slice_for(session: Session, change: IntentChange) -> Slice:
    if change.slice_ref is not None:
        s = session.get(Slice, change.slice_ref)
        if s is None:
            raise _unprocessable(f"slice {change.slice_ref} does not exist", "slice_ref")
        return s
    tenant = (session.scalar(select(Tenant).where(Tenant.vni == change.tenant_vni))
              if change.tenant_vni is not None else None)
    if change.tenant_vni is not None and tenant is None:
        raise _unprocessable(f"no tenant has VNI {change.tenant_vni}", "tenant_vni")
    subs = select(Subscriber)
    if tenant is not None:
        subs = subs.where(Subscriber.tenant_id == tenant.id)
    if change.teid is not None:
        subs = subs.where(literal(change.teid) == any_(Subscriber.teids))
    if change.ue is not None:
        subs = subs.where(Subscriber.ue_ip.op("<<=")(str(IPv4Network(change.ue))))
    if change.teid is None and change.ue is None:
        raise _unprocessable("name the UE (srcIP / ue) or its GTP TEID", "ue")
    slices = {s.id: s for sub in session.scalars(subs) for s in sub.slices}
    if len(slices) != 1:
        raise _unprocessable(f"the flow's UE belongs to {len(slices)} slices; name one with slice_ref",
                             "slice_ref")
    return next(iter(slices.values()))


def _lane(s: Slice, change: IntentChange) -> int:
    lanes = list(s.slice_type.lanes)
    assert change.lane is not None
    if change.lane in lanes:
        return change.lane
    if change.source == "listing1" and change.lane < len(lanes):
        return lanes[change.lane]
    raise _unprocessable(f"slice {s.name} ({s.slice_type.name}) has lanes {lanes}; priority {change.lane} "
                         "is not one of them", "lane")


def _service_name(change: IntentChange) -> str:
    ports = ",".join(f"{lo}-{hi}" for lo, hi in change.dst_ports) or "any"
    dscp = ",".join(map(str, change.dscp)) or "any"
    return f"intent ports={ports} dscp={dscp}"[:120]


@router.post("", response_model=IntentResult, status_code=201)
def apply_intent(principal: Deployer, session: SessionDep, body: IntentBody) -> IntentResult:
    """Apply an intent (seed 001 Listing 1, or the native form) and redeploy its slice."""
    try:
        change = parse_intent(body)
    except IntentError as exc:
        errors = [FieldError(field=".".join(map(str, e["loc"])), message=e["msg"]) for e in exc.errors]
        raise ApiError(422, "Invalid intent", str(exc), errors=errors) from exc
    s = _slice_for(session, change)
    name = _service_name(change)
    existing = next((c for c in s.services if c.name == name), None)
    if change.operation == "insert":
        lane = _lane(s, change)
        if existing is None:
            existing = ServiceClass(slice_id=s.id, name=name, lane=lane,
                                    dst_ports=[[lo, hi] for lo, hi in change.dst_ports], dscp=list(change.dscp),
                                    protocol=change.protocol or "any")
            session.add(existing)
        else:
            existing.lane = lane
        session.commit()
        service_id: int | None = existing.id
    else:
        if existing is None:
            raise ApiError(404, "Not found", f"slice {s.name} has no service created by such an intent")
        session.delete(existing)
        session.commit()
        service_id, lane = None, None
    backends = list(session.scalars(select(Backend).where(Backend.id.in_([b.id for b in s.backends]))))
    deployed = [DeploymentPublic.model_validate(svc.deploy(session, b, principal.username)) for b in backends]
    return IntentResult(operation=change.operation, source=change.source, slice_id=s.id,
                        service_class_id=service_id, lane=lane, deployments=deployed)
