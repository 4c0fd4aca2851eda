"""Tenants: operators manage them; a tenant user sees only its own."""

from __future__ import annotations

from typing import Annotated

from fastapi import Header, Query, Response
from sqlalchemy import func, select

from sliceportal.api.crud import apply_changes, check_delete_version, check_version, etag, get_scoped, page, scoped
from sliceportal.api.deps import Reader, SessionDep, Writer
from sliceportal.api.errors import ApiError
from sliceportal.api.routing import session_router
from sliceportal.models import Slice, Subscriber, Tenant, User
from sliceportal.models.audit import record
from sliceportal.schemas.common import ListQuery, Page, PathId
from sliceportal.schemas.tenants import TenantCreate, TenantPublic, TenantUpdate
from sliceportal.services.collisions import check_tenant_unique, lock_ue_pools

router = session_router(prefix="/tenants", tags=["tenants"])
SORTABLE = {"id": Tenant.id, "name": Tenant.name, "vni": Tenant.vni, "vlan": Tenant.vlan}


@router.get("", response_model=Page[TenantPublic])
def list_tenants(principal: Reader, session: SessionDep, params: ListQuery) -> Page[TenantPublic]:
    stmt = scoped(select(Tenant), Tenant, principal.tenant_scope)
    rows, count = page(session, stmt, params, SORTABLE, [Tenant.name, Tenant.contact])
    return Page(data=[TenantPublic.model_validate(r) for r in rows], count=count)


@router.get("/{tenant_id}", response_model=TenantPublic)
def read_tenant(tenant_id: PathId, principal: Reader, session: SessionDep, response: Response) -> Tenant:
    tenant = get_scoped(session, Tenant, tenant_id, principal.tenant_scope, "tenant")
    etag(response, tenant)
    return tenant


@router.post("", response_model=TenantPublic, status_code=201)
def create_tenant(body: TenantCreate, _: Writer, session: SessionDep, response: Response) -> Tenant:
    lock_ue_pools(session)
    # every clash at once (name, VNI, VLAN, UE pool), before the database's constraints would
    # refuse the first of them alone (#29)
    check_tenant_unique(session, None, name=body.name, vni=body.vni, vlan=body.vlan, pool=body.ue_pool)
    tenant = Tenant(**body.model_dump(exclude_none=True))
    session.add(tenant)
    session.commit()
    etag(response, tenant)
    return tenant


@router.patch("/{tenant_id}", response_model=TenantPublic)
def update_tenant(
    tenant_id: PathId,
    body: TenantUpdate,
    principal: Writer,
    session: SessionDep,
    response: Response,
    if_match: Annotated[str | None, Header()] = None,
) -> Tenant:
    tenant = get_scoped(session, Tenant, tenant_id, principal.tenant_scope, "tenant")
    check_version(tenant, if_match, body.version)
    changes = body.model_dump(exclude_unset=True, exclude={"version"})
    if changes.get("contact", "") is None or changes.get("description", "") is None:
        changes = {k: ("" if v is None and k in ("contact", "description") else v) for k, v in changes.items()}
    if changes.get("ue_pool") is not None:
        lock_ue_pools(session)
    check_tenant_unique(
        session,
        tenant.id,
        name=changes.get("name"),
        vni=changes.get("vni"),
        vlan=changes.get("vlan"),
        pool=changes.get("ue_pool"),
    )
    apply_changes(tenant, changes, not_null=("name", "vni"))
    session.commit()
    etag(response, tenant)
    return tenant


@router.delete(
    "/{tenant_id}",
    status_code=204,
    responses={
        409: {"description": "the tenant still has users, slices or subscribers"},
        412: {"description": "If-Match names another version"},
    },
)
def delete_tenant(
    tenant_id: PathId,
    principal: Writer,
    session: SessionDep,
    force: Annotated[bool, Query(description="also delete its users, slices and subscribers")] = False,
    if_match: Annotated[str | None, Header()] = None,
) -> None:
    """Delete a tenant. While it has users, slices or subscribers this is refused unless
    ``force=true``, which deletes them too — each deletion in the audit log."""
    tenant = get_scoped(session, Tenant, tenant_id, principal.tenant_scope, "tenant")
    check_delete_version(tenant, if_match)
    held = {
        what: session.scalar(select(func.count()).select_from(model).where(model.tenant_id == tenant_id)) or 0
        for model, what in ((User, "users"), (Slice, "slices"), (Subscriber, "subscribers"))
    }
    held = {what: n for what, n in held.items() if n}
    if held and not force:
        listing = ", ".join(f"{n} {what}" for what, n in held.items())
        raise ApiError(
            409, "Conflict", f"the tenant still has {listing}; delete them first or send force=true", field="force"
        )
    for model in (Subscriber, Slice, User):
        for obj in session.scalars(select(model).where(model.tenant_id == tenant_id)):
            session.delete(obj)  # one audit row each (AuditedMixin)
    session.flush()
    if held:
        record(session, "tenant_force_delete", "tenant", tenant.id, before={"deleted_with": held}, tenant_id=tenant.id)
    session.delete(tenant)
    session.commit()
