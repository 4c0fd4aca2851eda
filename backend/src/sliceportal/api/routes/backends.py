"""Data-plane backends: operators register them with a driver name and options."""

from __future__ import annotations

from typing import Annotated

from fastapi import BackgroundTasks, Header, Request, Response
from sqlalchemy import exists, select

from sliceportal.api.admission import AdmissionOverride
from sliceportal.api.crud import apply_changes, check_version, etag, get_scoped, page
from sliceportal.api.deps import NotTenant, SessionDep, Writer
from sliceportal.api.errors import ApiError
from sliceportal.api.routing import session_router
from sliceportal.core.redaction import keep_secrets
from sliceportal.models import Backend, Deployment, Slice
from sliceportal.schemas.backends import BackendCreate, BackendPublic, BackendUpdate
from sliceportal.schemas.common import ListQuery, Page, PathId
from sliceportal.services import admission
from sliceportal.services.backends import POOL, describe, register
from sliceportal.services.health_probe import probe_backend

router = session_router(prefix="/backends", tags=["backends"])
SORTABLE = {"id": Backend.id, "name": Backend.name, "driver": Backend.driver, "health": Backend.health}


@router.get("", response_model=Page[BackendPublic])
def list_backends(_: NotTenant, session: SessionDep, params: ListQuery) -> Page[BackendPublic]:
    rows, count = page(session, select(Backend), params, SORTABLE, [Backend.name, Backend.driver])
    return Page(data=[BackendPublic.model_validate(b) for b in rows], count=count)


@router.get("/{backend_id}", response_model=BackendPublic)
def read_backend(backend_id: PathId, _: NotTenant, session: SessionDep, response: Response) -> Backend:
    b = get_scoped(session, Backend, backend_id, None, "backend")
    etag(response, b)
    return b


@router.post("", response_model=BackendPublic, status_code=201)
def create_backend(
    body: BackendCreate,
    principal: Writer,
    session: SessionDep,
    response: Response,
    request: Request,
    background: BackgroundTasks,
) -> Backend:
    """Register a backend; answers at once with health ``probing`` (a bounded probe follows)."""
    b = register(  # validates the driver and its options, learns geometry / capacity
        session,
        name=body.name,
        driver=body.driver,
        options=body.options,
        link_bps=body.link_bps,
        port_bps=body.port_bps,
        accept_unenforced=body.accept_unenforced,
    )
    session.commit()
    etag(response, b)
    background.add_task(probe_backend, request.app.state.sessionmaker, b.id)
    return b


@router.patch("/{backend_id}", response_model=BackendPublic)
def update_backend(
    backend_id: PathId,
    body: BackendUpdate,
    principal: Writer,
    session: SessionDep,
    response: Response,
    request: Request,
    background: BackgroundTasks,
    override: AdmissionOverride,
    if_match: Annotated[str | None, Header()] = None,
) -> Backend:
    """Rename, re-point or re-rate a backend; a change of ``link_bps``, ``port_bps`` or the options
    (which bind ports to tenants) runs admission control (409)."""
    b = get_scoped(session, Backend, backend_id, None, "backend")
    check_version(b, if_match, body.version)
    if body.options is not None:  # options read back from us carry secrets as REDACTED: keep those
        body.options = keep_secrets(body.options, b.options)
    apply_changes(
        b,
        body.model_dump(exclude_unset=True, exclude={"version"}),
        not_null=("name", "options", "link_bps", "port_bps", "accept_unenforced"),
    )
    if {"link_bps", "port_bps", "options"} & body.model_fields_set:
        admission.check(session, [b], override=override, action="update", subject=b)
    if "options" in body.model_fields_set:
        describe(session, b, probe=False)
        background.add_task(probe_backend, request.app.state.sessionmaker, b.id)
    session.commit()
    etag(response, b)
    return b


@router.delete("/{backend_id}", status_code=204)
def delete_backend(backend_id: PathId, principal: Writer, session: SessionDep) -> None:
    b = get_scoped(session, Backend, backend_id, None, "backend")
    if session.scalar(select(exists().where(Deployment.backend_id == b.id, Deployment.status == "running"))):
        raise ApiError(409, "Conflict", "a deployment to this backend is running", field="id")
    using = sorted(s.name for s in session.scalars(select(Slice).where(Slice.backends.any(Backend.id == b.id))))
    if using:  # their rule sets and per-backend state would lose their backend silently
        raise ApiError(
            409,
            "Conflict",
            f"slices {', '.join(using)} are assigned to backend {b.name}: remove it from them first",
            field="slices",
        )
    POOL.discard(session, b)
    session.delete(b)
    session.commit()
