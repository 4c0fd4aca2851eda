"""Per-flow intents (seed 001 §5, Listing 1): create, list, read (with their entries), delete.

An intent names UEs (IMSI, UE address / prefix, GTP TEID), services (ports, DSCP) and an
action; it applies to exactly those flows on every backend of their slice, above the
slice's own rules. ``POST`` takes Listing 1 or the native form; a Listing 1 ``DELETE``
message removes the intents with exactly its match. A retried ``POST`` with the same
``Idempotency-Key`` returns the first result; the same key with another body is a 409.
"""

from __future__ import annotations

from typing import Annotated, Any

from fastapi import Body, Header, Response
from sqlalchemy import select

from sliceportal.api import ratelimit
from sliceportal.api.crud import get_scoped, page, scoped
from sliceportal.api.deps import Deployer, Principal, Reader, SessionDep
from sliceportal.api.errors import ApiError, FieldError
from sliceportal.api.routing import session_router
from sliceportal.models import Deployment, Intent
from sliceportal.rules.intents import IntentChange, IntentError, parse_intent
from sliceportal.schemas.common import ListQuery, Page, PathId, QueryId
from sliceportal.schemas.deployments import DeploymentPublic
from sliceportal.schemas.intents import (
    IntentAction,
    IntentBackendEntries,
    IntentDetail,
    IntentMatch,
    IntentPublic,
    IntentRefusedPush,
    IntentResult,
    IntentRule,
)
from sliceportal.services import intents as svc

router = session_router(prefix="/intents", tags=["intents"])
SORTABLE = {
    "id": Intent.id,
    "created_at": Intent.created_at,
    "slice_id": Intent.slice_id,
    "tenant_id": Intent.tenant_id,
}

LISTING_1 = {
    "Resources": [
        {"resourceId": "F8A4C949", "encapsulationID1": "000003E9", "encapsulationType1": "vxlan"},
        {"resourceId": "B6E6B2B3", "encapsulationID2": "003E9001", "encapsulationType2": "gtp"},
        {"resourceId": "5A07C580", "srcIP": "10.45.0.1", "dstPort": "5004"},
    ],
    "Action": {"actionType": "INSERT", "actionName": "PRIO-QUEUE", "flow_hash": "E918D704", "rx_queue": "1"},
    "Params": [{"paramName": "interfaceName", "paramValue": "eth0"}],
}
NATIVE = {
    "operation": "insert",
    "imsi": ["001010000000001"],
    "dst_ports": [[5000, 5007]],
    "action": "prioritise",
    "lane": 6,
}

IntentBody = Annotated[
    dict[str, Any], Body(openapi_examples={"listing1": {"value": LISTING_1}, "native": {"value": NATIVE}})
]
IdempotencyKey = Annotated[
    str | None,
    Header(
        alias="Idempotency-Key",
        min_length=1,
        max_length=255,
        description="a retry with the same key and body returns the first result; another body is a 409",
    ),
]


def to_public(i: Intent) -> IntentPublic:
    return IntentPublic(
        id=i.id,
        tenant_id=i.tenant_id,
        slice_id=i.slice_id,
        owner=i.owner,
        created_at=i.created_at,
        version=i.version,
        source_format=i.source_format,
        source=i.source,
        match=IntentMatch(
            imsis=list(i.imsis),
            ue_prefixes=list(i.ue_prefixes),
            teids=list(i.teids),
            dst_ports=[(lo, hi) for lo, hi in i.dst_ports],
            dscp=list(i.dscp),
            protocol=i.protocol,
        ),
        action=IntentAction(type=i.action, lane=i.lane, rr_path=i.rr_path, rate_mbps=i.rate_mbps),
    )


def _requester(p: Principal) -> svc.Requester:
    return svc.Requester(p.user_id, p.username, p.tenant_scope)


def _parse(body: dict[str, Any]) -> IntentChange:
    try:
        return parse_intent(body)
    except IntentError as exc:
        errors = [FieldError(field=".".join(map(str, e["loc"])), message=e["msg"]) for e in exc.errors]
        raise ApiError(422, "Invalid intent", str(exc), errors=errors) from exc


def _result(
    operation: str,
    intents: list[IntentPublic],
    deployed: tuple[list[Deployment], list[tuple[int, str]]],
) -> IntentResult:
    done, refused = deployed
    return IntentResult(
        operation=operation,
        intents=intents,
        deployments=[DeploymentPublic.model_validate(d) for d in done],
        refused=[IntentRefusedPush(backend_id=b, detail=d) for b, d in refused],
    )


@router.post(
    "",
    response_model=IntentResult,
    status_code=201,
    dependencies=[ratelimit.DEPLOY],
    responses={409: {"description": "conflicts with another intent, or Idempotency-Key reused"}},
)
def apply_intent(
    principal: Deployer,
    session: SessionDep,
    body: IntentBody,
    response: Response,
    idempotency_key: IdempotencyKey = None,
) -> IntentResult:
    """Apply an intent (seed 001 Listing 1, or the native form) and redeploy its slice's backends."""
    change = _parse(body)
    who = _requester(principal)
    if change.operation == "delete":
        gone = svc.delete_matching(session, change, who)
        public = [to_public(i) for i in gone]
        return _result("delete", public, svc.deploy_slice(session, gone[0].slice_id, principal.username))
    first = svc.replay(session, who, idempotency_key, body)
    if first is None:
        it, created = svc.create(session, change, body, who, idempotency_key)
        if created:
            result = _result("insert", [to_public(it)], svc.deploy_slice(session, it.slice_id, principal.username))
            svc.remember_response(session, it, result.model_dump(mode="json"))
            return result
        first = it
    response.headers["Idempotent-Replayed"] = "true"
    if first.first_response is not None:
        return IntentResult.model_validate(first.first_response)
    return IntentResult(operation="insert", intents=[to_public(first)], deployments=[])


@router.get("", response_model=Page[IntentPublic])
def list_intents(
    principal: Reader, session: SessionDep, params: ListQuery, slice_id: QueryId = None, tenant_id: QueryId = None
) -> Page[IntentPublic]:
    stmt = scoped(select(Intent), Intent, principal.tenant_scope)
    if slice_id is not None:
        stmt = stmt.where(Intent.slice_id == slice_id)
    if tenant_id is not None:
        stmt = stmt.where(Intent.tenant_id == tenant_id)
    rows, count = page(session, stmt, params, SORTABLE, [Intent.owner])
    return Page(data=[to_public(i) for i in rows], count=count)


@router.get("/{intent_id}", response_model=IntentDetail)
def read_intent(intent_id: PathId, principal: Reader, session: SessionDep) -> IntentDetail:
    """The intent and, per backend of its slice, the entries it produced in the rule set in force."""
    it = get_scoped(session, Intent, intent_id, principal.tenant_scope, "intent")
    entries = [
        IntentBackendEntries(
            backend_id=e.backend.id,
            backend=e.backend.name,
            driver=e.backend.driver,
            rule_set=e.rule_set,
            rules=[IntentRule.model_validate(r) for r in e.rules],
            policer=e.policer,
            counters=e.counters,
        )
        for e in svc.entries(session, it, counters=True)
    ]
    return IntentDetail(**to_public(it).model_dump(), entries=entries)


@router.delete("/{intent_id}", response_model=IntentResult)
def delete_intent(intent_id: PathId, principal: Deployer, session: SessionDep) -> IntentResult:
    """Delete the intent and redeploy its slice's backends: its flows fall back to the slice's rules."""
    it = get_scoped(session, Intent, intent_id, principal.tenant_scope, "intent")
    public, slice_id = to_public(it), it.slice_id
    svc.delete(session, it)
    return _result("delete", [public], svc.deploy_slice(session, slice_id, principal.username))
