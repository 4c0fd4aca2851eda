"""Slices and the service classes inside them."""

from __future__ import annotations

from collections import Counter
from datetime import UTC, datetime
from typing import Annotated, Any

from fastapi import Header, Query, Response
from pydantic import ValidationError
from sqlalchemy import select
from sqlalchemy.orm import Session, joinedload

from sliceportal.api.admission import AdmissionOverride
from sliceportal.api.crud import apply_changes, check_version, etag, get_scoped, page, scoped
from sliceportal.api.deps import Reader, SessionDep, SettingsDep, Writer
from sliceportal.api.errors import ApiError, FieldError, not_found
from sliceportal.api.responses import model_json
from sliceportal.api.routing import session_router
from sliceportal.core.config import Settings
from sliceportal.models import Backend, ServiceClass, Slice, SliceType, Tenant
from sliceportal.schemas.common import ListQuery, Page, PathId, QueryId
from sliceportal.schemas.slices import (
    OpenViolation,
    ServiceClassCreate,
    ServiceClassPublic,
    ServiceClassUpdate,
    Sla,
    SliceBackendStatus,
    SliceBackendSummary,
    SliceCreate,
    SlicePublic,
    SliceStatusPublic,
    SliceSummaryState,
    SliceUpdate,
    StateCount,
)
from sliceportal.services import admission
from sliceportal.services.collisions import ServiceMatch, check_service_against, check_services_disjoint
from sliceportal.services.slice_status import SUMMARY_ORDER, BackendStatus, slice_statuses, summary

router = session_router(prefix="/slices", tags=["slices"])
SORTABLE = {"id": Slice.id, "name": Slice.name, "tenant_id": Slice.tenant_id, "slice_type_id": Slice.slice_type_id}
SLA_FIELDS = tuple(Sla.model_fields)


def _summaries(entries: list[BackendStatus]) -> list[SliceBackendSummary]:
    return [
        SliceBackendSummary(
            backend_id=e.backend_id,
            backend_name=e.backend_name,
            state=e.state.value,
            sla=e.sla.value,
            rule_set_number=e.rule_set_number,
        )
        for e in entries
    ]


def to_public(s: Slice, status: list[BackendStatus]) -> SlicePublic:
    return SlicePublic(
        id=s.id,
        name=s.name,
        tenant_id=s.tenant_id,
        slice_type_id=s.slice_type_id,
        slice_type_name=s.slice_type.name,
        lanes=list(s.slice_type.lanes),
        description=s.description,
        sla=Sla(**{f: getattr(s, f) for f in SLA_FIELDS}),
        path_mode=s.path_mode,
        state=summary(status),
        status=_summaries(status),
        backend_ids=sorted(b.id for b in s.backends),
        services=[ServiceClassPublic.model_validate(c) for c in s.services],
        version=s.version,
        created_at=s.created_at,
        updated_at=s.updated_at,
    )


ONE_SLICE = (joinedload(Slice.backends), joinedload(Slice.services))


def _statuses(
    session: Session, settings: Settings, slices: list[Slice], *, detail: bool = False
) -> dict[int, list[BackendStatus]]:
    return slice_statuses(session, slices, datetime.now(UTC), settings.sla_no_data_after, detail=detail)


def _public(session: Session, settings: Settings, s: Slice) -> SlicePublic:
    return to_public(s, _statuses(session, settings, [s])[s.id])


def _slice_type(session: Session, slice_type_id: PathId) -> SliceType:
    st = session.get(SliceType, slice_type_id)
    if st is None:
        raise ApiError(
            422,
            "Validation failed",
            f"slice type {slice_type_id} does not exist; see GET /api/v1/slice-types",
            field="slice_type_id",
        )
    return st


def _backends(session: Session, ids: list[int]) -> list[Backend]:
    found = list(session.scalars(select(Backend).where(Backend.id.in_(ids))))
    missing = sorted(set(ids) - {b.id for b in found})
    if missing:
        raise ApiError(422, "Validation failed", f"backends {missing} do not exist", field="backend_ids")
    return found


def _check_lanes(lanes: list[int], services: list[tuple[str, int]]) -> None:
    bad = [
        FieldError(field=f"{path}.lane", message=f"lane {lane} is not one of the slice type's lanes {lanes}")
        for path, lane in services
        if lane not in lanes
    ]
    if bad:
        raise ApiError(422, "Validation failed", "; ".join(e.message for e in bad), errors=bad)


def _match(name: str, row: dict[str, Any]) -> ServiceMatch:
    """What a service class matches on, from its stored row (dst_ports as [[lo, hi], ...])."""
    return ServiceMatch(
        name=name,
        dst_ports=[(int(lo), int(hi)) for lo, hi in row.get("dst_ports") or []],
        dscp=list(row.get("dscp") or []),
        protocol=str(row.get("protocol") or "any"),
    )


def _stored_match(c: ServiceClass) -> ServiceMatch:
    return _match(c.name, {"dst_ports": c.dst_ports, "dscp": c.dscp, "protocol": c.protocol})


def _service_row(body: ServiceClassCreate | dict[str, Any]) -> dict[str, Any]:
    data = body.model_dump() if isinstance(body, ServiceClassCreate) else dict(body)
    if "dst_ports" in data and data["dst_ports"] is not None:
        data["dst_ports"] = [[r["lo"], r["hi"]] for r in data["dst_ports"]]
    return data


@router.get("", response_model=Page[SlicePublic])
def list_slices(
    principal: Reader,
    session: SessionDep,
    settings: SettingsDep,
    params: ListQuery,
    tenant_id: QueryId = None,
    state: Annotated[SliceSummaryState | None, Query(description="the derived summary state")] = None,
) -> Response:
    stmt = scoped(select(Slice), Slice, principal.tenant_scope)
    if tenant_id is not None:
        stmt = stmt.where(Slice.tenant_id == tenant_id)
    if state is not None:
        # derived from stored state (services/slice_status.py): every candidate's, then filtered
        every = _statuses(session, settings, list(session.scalars(stmt)))
        stmt = stmt.where(Slice.id.in_([sid for sid, st in every.items() if summary(st) == state]))
    rows, count = page(session, stmt, params, SORTABLE, [Slice.name, Slice.description])
    statuses = _statuses(session, settings, rows)
    return model_json(Page[SlicePublic](data=[to_public(s, statuses[s.id]) for s in rows], count=count))


@router.get("/states", response_model=list[StateCount])
def slice_state_counts(principal: Reader, session: SessionDep, settings: SettingsDep) -> list[StateCount]:
    """How many of the caller's slices are in each derived summary state (the overview's cards)."""
    slices = list(session.scalars(scoped(select(Slice), Slice, principal.tenant_scope)))
    counts = Counter(summary(st) for st in _statuses(session, settings, slices).values())
    return [StateCount(state=name, count=counts.get(name, 0)) for name in SUMMARY_ORDER]


@router.get("/{slice_id}", response_model=SlicePublic)
def read_slice(slice_id: PathId, principal: Reader, session: SessionDep, settings: SettingsDep) -> Response:
    # the slice with its backends and service classes in one statement (a few rows: their
    # product), where the relationships' own select-in loads are two more
    s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice", *ONE_SLICE)
    answer = model_json(_public(session, settings, s))
    etag(answer, s)
    return answer


@router.get("/{slice_id}/status", response_model=SliceStatusPublic)
def slice_status(slice_id: PathId, principal: Reader, session: SessionDep, settings: SettingsDep) -> SliceStatusPublic:
    """The slice on each backend it is assigned to, derived from facts: the rule set in force
    and what compiling now gives (draft / pending / deployed / out_of_sync / failed /
    not_deployed), and the SLA from its samples and violations (met / degraded / no_data).
    Only here is a pending slice's ``changes`` worked out (it compiles the backend's slices)."""
    s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    entries = _statuses(session, settings, [s], detail=True)[s.id]
    return SliceStatusPublic(
        slice_id=s.id,
        state=summary(entries),
        backends=[
            SliceBackendStatus(
                backend_id=e.backend_id,
                backend_name=e.backend_name,
                state=e.state.value,
                sla=e.sla.value,
                rule_set_number=e.rule_set_number,
                detail=e.detail,
                since=e.since,
                changes=e.changes,
                sync_state=e.sync_state,
                sync_detail=e.sync_detail,
                synced_at=e.synced_at,
                open_violations=[
                    OpenViolation(
                        id=v.id,
                        lane=v.lane,
                        metric=v.metric,
                        threshold=v.threshold,
                        worst=v.worst,
                        started_at=v.started_at,
                    )
                    for v in e.open_violations
                ],
                last_sample_at=e.last_sample_at,
            )
            for e in entries
        ],
    )


@router.post("", response_model=SlicePublic, status_code=201)
def create_slice(
    body: SliceCreate,
    _: Writer,
    session: SessionDep,
    settings: SettingsDep,
    response: Response,
    override: AdmissionOverride,
) -> SlicePublic:
    if session.get(Tenant, body.tenant_id) is None:
        raise ApiError(422, "Validation failed", f"tenant {body.tenant_id} does not exist", field="tenant_id")
    st = _slice_type(session, body.slice_type_id)
    _check_lanes(st.lanes, [(f"services.{i}", svc.lane) for i, svc in enumerate(body.services)])
    check_services_disjoint(
        [(f"services.{i}", _match(svc.name, _service_row(svc))) for i, svc in enumerate(body.services)]
    )
    s = Slice(
        tenant_id=body.tenant_id,
        slice_type_id=st.id,
        name=body.name,
        description=body.description,
        path_mode=body.path_mode,
        backends=_backends(session, body.backend_ids),
        services=[ServiceClass(**_service_row(svc)) for svc in body.services],
        **body.sla.model_dump(),
    )
    session.add(s)
    admission.check(session, s.backends, override=override, action="create", subject=s)
    session.commit()
    etag(response, s)
    return _public(session, settings, s)


@router.patch("/{slice_id}", response_model=SlicePublic)
def update_slice(
    slice_id: PathId,
    body: SliceUpdate,
    principal: Writer,
    session: SessionDep,
    settings: SettingsDep,
    response: Response,
    override: AdmissionOverride,
    if_match: Annotated[str | None, Header()] = None,
) -> SlicePublic:
    """Change the fields the body names. ``sla`` is merged into the slice's SLA (RFC 7396): its
    fields the body leaves out stay, ``null`` clears one, and the SLA that results must be
    consistent (422 naming the conflict otherwise)."""
    s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    check_version(s, if_match, body.version)
    changes = body.model_dump(exclude_unset=True, exclude={"version", "sla", "backend_ids"})
    if body.slice_type_id is not None:
        st = _slice_type(session, body.slice_type_id)
        _check_lanes(st.lanes, [(f"services.{c.id}", c.lane) for c in s.services])
    if body.sla is not None:
        changes.update(_merged_sla(s, body.sla))
    if body.backend_ids is not None:
        s.backends = _backends(session, body.backend_ids)
    apply_changes(s, changes, not_null=("name", "slice_type_id", "description", "path_mode"))
    admission.check(session, s.backends, override=override, action="update", subject=s)
    session.commit()
    session.refresh(s)
    etag(response, s)
    return _public(session, settings, s)


def _merged_sla(s: Slice, patch: Sla) -> dict[str, Any]:
    """A PATCH's ``sla`` as a JSON merge patch (RFC 7396): the fields it names change (null
    clears one), the others stay; the result is checked whole, as a create's is (a guaranteed
    rate above the limit the slice keeps is refused, not stored)."""
    merged = {f: getattr(s, f) for f in SLA_FIELDS} | patch.model_dump(exclude_unset=True)
    try:
        return Sla(**merged).model_dump()
    except ValidationError as exc:
        problem = exc.errors()[0]
        field = ".".join(["sla", *(str(p) for p in problem["loc"])]) if problem["loc"] else "sla"
        raise ApiError(
            422, "Validation failed", f"with the slice's other SLA fields: {problem['msg']}", field=field
        ) from None


@router.delete(
    "/{slice_id}",
    status_code=204,
    responses={409: {"description": "the slice is still assigned to backends (its rules are there)"}},
)
def delete_slice(
    slice_id: PathId,
    principal: Writer,
    session: SessionDep,
    force: Annotated[
        bool, Query(description="delete even while assigned to backends; they drop its rules at their next deploy")
    ] = False,
) -> None:
    """Delete a slice with its services, intents, KPI history and subscriber memberships (the
    subscribers stay). Refused while it is assigned to backends unless ``force=true``: their data
    planes keep its rules until the next deploy."""
    s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    if s.backends and not force:
        names = ", ".join(sorted(b.name for b in s.backends))
        raise ApiError(
            409,
            "Conflict",
            f"slice {s.name} is assigned to backends {names}: remove them from the slice "
            "and deploy first, or send force=true",
            field="backend_ids",
        )
    session.delete(s)
    session.commit()


# ---- service classes, nested under their slice -----------------------------------


@router.get("/{slice_id}/services", response_model=list[ServiceClassPublic])
def list_services(slice_id: PathId, principal: Reader, session: SessionDep) -> list[ServiceClass]:
    return list(get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice").services)


@router.post("/{slice_id}/services", response_model=ServiceClassPublic, status_code=201)
def create_service(
    slice_id: PathId, body: ServiceClassCreate, principal: Writer, session: SessionDep, override: AdmissionOverride
) -> ServiceClass:
    s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
    _check_lanes(s.slice_type.lanes, [("lane", body.lane)])
    check_service_against(_match(body.name, _service_row(body)), [_stored_match(c) for c in s.services], s.name)
    svc = ServiceClass(slice_id=s.id, **_service_row(body))
    session.add(svc)
    admission.check(session, s.backends, override=override, action="update", subject=s)  # lanes change delays
    session.commit()
    return svc


def _service(session: Session, slice_id: PathId, service_id: PathId, tenant_scope: int | None) -> ServiceClass:
    s = get_scoped(session, Slice, slice_id, tenant_scope, "slice")
    for svc in s.services:
        if svc.id == service_id:
            return svc
    raise not_found("service class", service_id)


@router.patch("/{slice_id}/services/{service_id}", response_model=ServiceClassPublic)
def update_service(
    slice_id: PathId,
    service_id: PathId,
    body: ServiceClassUpdate,
    principal: Writer,
    session: SessionDep,
    override: AdmissionOverride,
    if_match: Annotated[str | None, Header()] = None,
) -> ServiceClass:
    svc = _service(session, slice_id, service_id, principal.tenant_scope)
    check_version(svc, if_match, body.version)
    changes = _service_row(body.model_dump(exclude_unset=True, exclude={"version"}))
    if changes.get("lane") is not None:
        s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
        _check_lanes(s.slice_type.lanes, [("lane", changes["lane"])])
    apply_changes(svc, changes, not_null=("name", "lane", "dst_ports", "dscp", "protocol"))
    if {"dst_ports", "dscp", "protocol", "name"} & changes.keys():
        s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
        check_service_against(_stored_match(svc), [_stored_match(c) for c in s.services if c.id != svc.id], s.name)
    if changes.get("lane") is not None:  # a lane changes the slice's worst-case delays
        s = get_scoped(session, Slice, slice_id, principal.tenant_scope, "slice")
        admission.check(session, s.backends, override=override, action="update", subject=s)
    session.commit()
    return svc


@router.delete("/{slice_id}/services/{service_id}", status_code=204)
def delete_service(slice_id: PathId, service_id: PathId, principal: Writer, session: SessionDep) -> None:
    session.delete(_service(session, slice_id, service_id, principal.tenant_scope))
    session.commit()
