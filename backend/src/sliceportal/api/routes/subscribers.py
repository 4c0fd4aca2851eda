"""Subscribers: server-side paged list, CRUD, and bulk CSV import."""

from __future__ import annotations

import csv
import logging
import threading
from ipaddress import IPv4Address, IPv4Network
from typing import Annotated, Any, NamedTuple

from fastapi import File, Header, Request, Response, UploadFile
from fastapi.responses import JSONResponse
from sqlalchemy import ColumnElement, Select, cast, func, literal_column, or_, select, text
from sqlalchemy.dialects.postgresql import INET, aggregate_order_by
from sqlalchemy.orm import Session, lazyload
from sqlalchemy.types import Integer, String

from sliceportal.api import ratelimit
from sliceportal.api.admission import AdmissionOverride
from sliceportal.api.crud import (
    apply_changes,
    check_delete_version,
    check_version,
    etag,
    get_scoped,
    page_rows,
    scoped,
)
from sliceportal.api.deps import Reader, SessionDep, Writer, wants_async
from sliceportal.api.errors import ApiError, not_found
from sliceportal.api.responses import model_json, plain_json
from sliceportal.api.routing import session_router
from sliceportal.models import ImportJob, Slice, Subscriber, Tenant
from sliceportal.models.audit import actor_of, record, set_actor
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.schemas.common import ListQuery, Page, PathId, QueryId
from sliceportal.schemas.import_jobs import ImportJobPublic
from sliceportal.schemas.subscribers import (
    BulkDeleteReport,
    ImportReport,
    SubscriberBulkDelete,
    SubscriberCreate,
    SubscriberPublic,
    SubscriberUpdate,
)
from sliceportal.services import admission, import_jobs
from sliceportal.services.admission import Override
from sliceportal.services.collisions import imsi_holder, imsi_lock, refuse_imsi

log = logging.getLogger(__name__)
router = session_router(prefix="/subscribers", tags=["subscribers"])
SORTABLE = {
    "id": Subscriber.id,
    "imsi": Subscriber.imsi,
    "ue_ip": Subscriber.ue_ip,
    "tenant_id": Subscriber.tenant_id,
    "created_at": Subscriber.created_at,
}


# What a read answers, one expression per field of SubscriberPublic in its order, in one
# statement: the address as text (host(): without the prefix length), the slice ids from the
# link table, ascending. A read's rows become its JSON without a model (plain_json): parsing and
# printing addresses with ipaddress alone was a tenth of a list page's CPU.
_PUBLIC_EXPRESSIONS: dict[str, Any] = {
    "id": Subscriber.id,
    "tenant_id": Subscriber.tenant_id,
    "imsi": Subscriber.imsi,
    "ue_ip": func.host(Subscriber.ue_ip),
    "teids": Subscriber.teids,
    "slice_ids": select(
        func.coalesce(
            func.array_agg(aggregate_order_by(subscriber_slice.c.slice_id, subscriber_slice.c.slice_id)),
            literal_column("'{}'::bigint[]"),
        )
    )
    .where(subscriber_slice.c.subscriber_id == Subscriber.id)
    .scalar_subquery(),
    "guaranteed_bps": Subscriber.guaranteed_bps,
    "version": Subscriber.version,
    "created_at": Subscriber.created_at,
}
PUBLIC_ROW = tuple(_PUBLIC_EXPRESSIONS[name].label(name) for name in SubscriberPublic.model_fields)


def to_public(s: Subscriber) -> SubscriberPublic:
    """A subscriber just written, its ``slices`` loaded (reads answer from ``PUBLIC_ROW``)."""
    return SubscriberPublic(
        id=s.id,
        tenant_id=s.tenant_id,
        imsi=s.imsi,
        ue_ip=IPv4Address(str(s.ue_ip)),
        teids=list(s.teids),
        slice_ids=[x.id for x in s.slices],
        guaranteed_bps=s.guaranteed_bps,
        version=s.version,
        created_at=s.created_at,
    )


TENANT_LOCK = 7401  # advisory lock key space of tenants' subscriber writes


class _Locked(NamedTuple):
    """What a subscriber write read while taking its locks: its tenant's id and UE pool."""

    id: int
    ue_pool: str | None


def _lock_for_write(session: Session, tenant_id: int, imsi: str | None, *, tenant: bool) -> _Locked | None:
    """Take, in one statement, the locks a subscriber write needs where a check is not a
    constraint — its tenant's (TEID uniqueness, admission of guaranteed rates) when ``tenant``,
    then its IMSI's (unique across tenants) when ``imsi`` — and read the tenant. None when no
    tenant has that id (and no lock is taken). Always in this order, so writers cannot deadlock."""
    locks: list[ColumnElement[Any]] = (
        [func.pg_advisory_xact_lock(TENANT_LOCK, cast(Tenant.id, Integer))] if tenant else []
    )
    if imsi is not None:
        locks.append(imsi_lock(imsi))
    row = session.execute(select(Tenant.id, cast(Tenant.ue_pool, String), *locks).where(Tenant.id == tenant_id)).first()
    return None if row is None else _Locked(row[0], row[1])


def _validate(
    session: Session,
    tenant: _Locked,
    ue_ip: IPv4Address | None,
    teids: list[int] | None,
    imsi: str | None,
    slice_ids: list[int] | None,
    own_id: int | None,
    tenant_scope: int | None,
) -> list[Slice] | None:
    """Check a write's fields against the tenant and every other subscriber (the caller holds
    ``_lock_for_write``'s locks): the UE pool, then TEIDs and the IMSI in one statement, then
    the slices. The slices found (None when ``slice_ids`` is None)."""
    if ue_ip is not None and tenant.ue_pool is not None and ue_ip not in IPv4Network(tenant.ue_pool):
        raise ApiError(
            422, "Validation failed", f"{ue_ip} is outside the tenant's UE pool {tenant.ue_pool}", field="ue_ip"
        )
    clashes: list[Any] = []
    if teids:
        teid_holder = (
            select(Subscriber.id)
            .where(Subscriber.tenant_id == tenant.id, Subscriber.teids.overlap(teids), Subscriber.id != (own_id or 0))
            .limit(1)
            .scalar_subquery()
        )
        clashes.append(teid_holder.label("teids"))
    if imsi is not None:
        clashes.append(imsi_holder(imsi, own_id).label("imsi"))
    held = session.execute(select(*clashes)).one()._asdict() if clashes else {}
    if held.get("teids") is not None:
        raise ApiError(
            409, "Conflict", f"a TEID of {teids} is already used by subscriber {held['teids']}", field="teids"
        )
    found = _slices(session, tenant.id, slice_ids)
    if imsi is not None and held["imsi"] is not None:
        refuse_imsi(session, imsi, held["imsi"], tenant_scope=tenant_scope)
    return found


def _slices(session: Session, tenant_id: int, slice_ids: list[int] | None) -> list[Slice] | None:
    if slice_ids is None:
        return None
    if not slice_ids:
        return []
    # only the ids are used: the slices' own relationships (type, backends, services) stay unloaded
    found = list(
        session.scalars(
            select(Slice).options(lazyload("*")).where(Slice.id.in_(slice_ids), Slice.tenant_id == tenant_id)
        )
    )
    missing = sorted(set(slice_ids) - {s.id for s in found})
    if missing:
        raise ApiError(422, "Validation failed", f"the tenant has no slices {missing}", field="slice_ids")
    return found


AnySelect = Select[*tuple[Any, ...]]
SEARCHED = (Subscriber.imsi, func.host(cast(Subscriber.ue_ip, INET)).cast(String))  # what `q` looks in
MAX_AUDITED_IMSIS = 1000  # a bulk delete's audit row lists the IMSIs up to this many (the count is exact)


def _filtered(stmt: AnySelect, tenant_scope: int | None, tenant_id: int | None, slice_id: int | None) -> AnySelect:
    stmt = scoped(stmt, Subscriber, tenant_scope)
    if tenant_id is not None:
        stmt = stmt.where(Subscriber.tenant_id == tenant_id)
    if slice_id is not None:
        # the link table alone (no join with slice): its slice_id index answers it
        stmt = stmt.where(
            Subscriber.id.in_(select(subscriber_slice.c.subscriber_id).where(subscriber_slice.c.slice_id == slice_id))
        )
    return stmt


@router.get("", response_model=Page[SubscriberPublic])
def list_subscribers(
    principal: Reader, session: SessionDep, params: ListQuery, tenant_id: QueryId = None, slice_id: QueryId = None
) -> Response:
    stmt = _filtered(select(*PUBLIC_ROW), principal.tenant_scope, tenant_id, slice_id)
    rows, count = page_rows(session, stmt, params, SORTABLE, SEARCHED)
    return plain_json({"data": [r._asdict() for r in rows], "count": count})


@router.post(
    "/bulk-delete",
    response_model=BulkDeleteReport,
    responses={409: {"description": "expected_count differs from what the filter matches now"}},
)
def bulk_delete_subscribers(body: SubscriberBulkDelete, principal: Writer, session: SessionDep) -> BulkDeleteReport:
    """Delete every subscriber the filter matches (the list's filter), all at once, in one audit row.

    An empty filter is refused unless ``all`` is true; send ``expected_count`` (the count the
    user confirmed) so that a list changed in the meantime is refused rather than deleted.
    """
    applied = body.model_dump(include={"tenant_id", "slice_id", "q"}, exclude_none=True)
    if not applied and not body.all:
        raise ApiError(
            422,
            "Validation failed",
            "an empty filter would delete every subscriber; filter by tenant, slice or search text, or send all=true",
            field="all",
        )
    stmt = _filtered(select(Subscriber.id, Subscriber.imsi), principal.tenant_scope, body.tenant_id, body.slice_id)
    if body.q:
        escaped = body.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        stmt = stmt.where(or_(*(col.ilike(f"%{escaped}%") for col in SEARCHED)))
    # lock the matched rows: the count confirmed, the rows deleted and the audit row agree
    rows = session.execute(stmt.order_by(Subscriber.id).with_for_update(of=Subscriber)).all()
    if body.expected_count is not None and body.expected_count != len(rows):
        raise ApiError(
            409,
            "Conflict",
            f"the filter now matches {len(rows)} subscribers, not the "
            f"{body.expected_count} confirmed; review the list and confirm again",
            field="expected_count",
        )
    if rows:
        # one array parameter, not one bind per row (a protocol limit of 65 535 binds)
        session.execute(text("DELETE FROM subscriber WHERE id = ANY(:ids)"), {"ids": [r.id for r in rows]})
    imsis = [r.imsi for r in rows[:MAX_AUDITED_IMSIS]]
    record(
        session,
        "bulk_delete",
        "subscriber",
        None,
        before={"filter": applied, "all": body.all, "count": len(rows), "imsis": imsis},
        tenant_id=principal.tenant_scope if principal.tenant_scope is not None else body.tenant_id,
    )
    session.commit()
    return BulkDeleteReport(deleted=len(rows), filter={**applied, "all": body.all})


@router.get("/{subscriber_id}", response_model=SubscriberPublic)
def read_subscriber(subscriber_id: PathId, principal: Reader, session: SessionDep) -> Response:
    row = session.execute(
        scoped(select(*PUBLIC_ROW).where(Subscriber.id == subscriber_id), Subscriber, principal.tenant_scope)
    ).first()
    if row is None:
        raise not_found("subscriber", subscriber_id)
    answer = plain_json(row._asdict())
    etag(answer, row)
    return answer


def _admit(session: Session, s: Subscriber, override: Override | None, action: str) -> None:
    """A subscriber with its own guarantee adds to its slices' promises: admission control on
    every backend those slices use (409 with the computation; nothing is written)."""
    backends = [b for x in s.slices for b in x.backends]
    if backends:
        admission.check(session, backends, override=override, action=action, subject=s, waive=s.slices)


@router.post("", response_model=SubscriberPublic, status_code=201)
def create_subscriber(
    body: SubscriberCreate, principal: Writer, session: SessionDep, override: AdmissionOverride
) -> Response:
    """A subscriber with ``guaranteed_bps`` joining slices runs admission control (409 with the
    computation; operators may send ``Admission-Override: <reason>``)."""
    # the tenant's lock only with TEIDs or a rate: every create of a tenant waited for it, a
    # convoy under load (bench api_open_loop)
    tenant = (
        _lock_for_write(session, body.tenant_id, body.imsi, tenant=bool(body.teids or body.guaranteed_bps))
        if principal.tenant_scope in (None, body.tenant_id)
        else None
    )
    if tenant is None:
        raise ApiError(422, "Validation failed", f"tenant {body.tenant_id} does not exist", field="tenant_id")
    slices = _validate(session, tenant, body.ue_ip, body.teids, body.imsi, body.slice_ids, None, principal.tenant_scope)
    s = Subscriber(
        tenant_id=tenant.id,
        imsi=body.imsi,
        ue_ip=body.ue_ip,
        teids=body.teids,
        slices=slices or [],
        guaranteed_bps=body.guaranteed_bps,
    )
    session.add(s)
    if s.guaranteed_bps:
        _admit(session, s, override, "create")
    session.commit()
    answer = model_json(to_public(s), status_code=201)
    etag(answer, s)
    return answer


@router.patch("/{subscriber_id}", response_model=SubscriberPublic)
def update_subscriber(
    subscriber_id: PathId,
    body: SubscriberUpdate,
    principal: Writer,
    session: SessionDep,
    override: AdmissionOverride,
    if_match: Annotated[str | None, Header()] = None,
) -> Response:
    """A larger ``guaranteed_bps``, or a guaranteed subscriber joining a slice, runs admission control."""
    s = get_scoped(session, Subscriber, subscriber_id, principal.tenant_scope, "subscriber")
    check_version(s, if_match, body.version)
    new_imsi = body.imsi if body.imsi is not None and body.imsi != s.imsi else None
    tenant = _lock_for_write(session, s.tenant_id, new_imsi, tenant=True)
    assert tenant is not None  # the subscriber's own tenant (a tenant is deleted with its subscribers)
    slices = _validate(session, tenant, body.ue_ip, body.teids, new_imsi, body.slice_ids, s.id, principal.tenant_scope)
    before_bps, before_slices = s.guaranteed_bps or 0, {x.id for x in s.slices}
    changes = body.model_dump(exclude_unset=True, exclude={"version", "slice_ids"})
    apply_changes(s, changes, not_null=("imsi", "ue_ip", "teids"))
    if slices is not None:
        s.slices = slices
    if s.guaranteed_bps and (s.guaranteed_bps > before_bps or {x.id for x in s.slices} - before_slices):
        _admit(session, s, override, "update")
    session.commit()
    answer = model_json(to_public(s))
    etag(answer, s)
    return answer


@router.delete("/{subscriber_id}", status_code=204, responses={412: {"description": "If-Match names another version"}})
def delete_subscriber(
    subscriber_id: PathId, principal: Writer, session: SessionDep, if_match: Annotated[str | None, Header()] = None
) -> None:
    s = get_scoped(session, Subscriber, subscriber_id, principal.tenant_scope, "subscriber")
    check_delete_version(s, if_match)
    session.delete(s)
    session.commit()


IMPORT_ASYNC: dict[int | str, dict[str, Any]] = {
    202: {
        "model": ImportJobPublic,
        "description": "with Prefer: respond-async: the import job is running; Location "
        "names it (GET it for its outcome)",
    }
}


@router.post(
    "/import",
    response_model=ImportReport,
    status_code=201,
    dependencies=[ratelimit.IMPORT],
    responses=IMPORT_ASYNC,
    summary="Import subscribers from CSV (imsi,ue_ip,teids,tenant,slices[,guaranteed_bps]); all or nothing",
)
def import_subscribers(
    principal: Writer,
    session: SessionDep,
    override: AdmissionOverride,
    request: Request,
    file: Annotated[UploadFile, File(description="CSV with a header row")],
    prefer: Annotated[str | None, Header()] = None,
) -> ImportReport | Response:
    """An optional ``guaranteed_bps`` column gives subscribers their own guarantees: admission
    control then runs for the slices they join (409 with the computation, nothing imported).

    The import is a job (services/import_jobs.py): if the API worker dies mid-import, the
    leading controller imports the upload again, as the same user; nothing is half imported.
    With ``Prefer: respond-async`` the answer is 202 as soon as the job exists (``Location``:
    ``GET /subscribers/import-jobs/{id}``, ``running`` until it ends)."""
    data = file.file.read()  # at most Settings.max_upload_bytes (the upload limit's middleware)
    actor, scope = actor_of(session), principal.tenant_scope
    job_id = import_jobs.create(session, data, actor=actor, tenant_scope=scope, override=override)
    if wants_async(prefer):
        sessions = request.app.state.sessionmaker

        def work() -> None:
            try:
                with sessions() as s:
                    set_actor(s, actor)
                    import_jobs.run(s, job_id, data, tenant_scope=scope, override=override)
            except import_jobs.REFUSALS:
                pass  # the job records the refusal
            except Exception:  # the job stays running: the leader imports it again once stale
                log.exception("import job %d failed", job_id)

        threading.Thread(target=work, name=f"import-job-{job_id}", daemon=True).start()
        body = ImportJobPublic.model_validate(session.get_one(ImportJob, job_id)).model_dump(mode="json")
        location = request.app.url_path_for("read_import_job", job_id=job_id)
        return JSONResponse(body, status_code=202, headers={"Location": str(location)})
    try:
        result = import_jobs.run(session, job_id, data, tenant_scope=scope, override=override)
    except (UnicodeDecodeError, csv.Error) as exc:
        raise ApiError(422, "Validation failed", import_jobs.describe(exc), field="file") from exc
    return ImportReport(imported=result.imported, rows=result.rows, duration_s=result.duration_s)


@router.get("/import-jobs/{job_id}", response_model=ImportJobPublic)
def read_import_job(job_id: PathId, principal: Writer, session: SessionDep) -> ImportJobPublic:
    """One CSV import job: ``running`` until it ends, then ``succeeded`` with its report or
    ``failed`` with its error. A tenant-bound caller sees its own tenant's jobs only."""
    job = session.get(ImportJob, job_id)
    if job is None or (principal.tenant_scope is not None and job.tenant_id != principal.tenant_scope):
        raise not_found("import job", job_id)
    return ImportJobPublic.model_validate(job)
