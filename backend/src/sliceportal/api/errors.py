"""One error format for every failure: RFC 9457 problem+json, naming the offending field."""

from __future__ import annotations

import logging
import re
from typing import Any

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from pydantic import BaseModel
from sqlalchemy.exc import DataError, IntegrityError, InterfaceError, OperationalError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm.exc import StaleDataError
from starlette.exceptions import HTTPException as StarletteHTTPException

from sliceportal.drivers.contract import DriverError, UnreachableError
from sliceportal.services.errors import (
    BusyError,
    ConflictError,
    DomainError,
    InvalidError,
    NotFoundError,
    UnavailableError,
)

log = logging.getLogger(__name__)

PROBLEM_JSON = "application/problem+json"


class FieldError(BaseModel):
    field: str
    message: str
    line: int | None = None  # CSV imports: the line of the file


class Problem(BaseModel):
    type: str = "about:blank"
    title: str
    status: int
    detail: str = ""
    instance: str = ""
    errors: list[FieldError] = []


class ApiError(Exception):
    """Raise from anywhere below the API to answer with a problem."""

    def __init__(
        self,
        status: int,
        title: str,
        detail: str = "",
        *,
        field: str | None = None,
        errors: list[FieldError] | None = None,
        headers: dict[str, str] | None = None,
    ) -> None:
        super().__init__(detail or title)
        self.status, self.title, self.detail, self.headers = status, title, detail, headers
        self.errors = errors or ([FieldError(field=field, message=detail or title)] if field else [])


def not_found(what: str, ident: object) -> ApiError:
    return ApiError(404, "Not found", f"{what} {ident} does not exist")


# Unique / check / foreign-key constraint name -> the field a client must change, and what to
# tell them ({value} is the offending value from PostgreSQL's detail). The database's own text
# (`Key (vni)=(100) already exists`) never leaves the API.
CONSTRAINTS: dict[str, tuple[str, str]] = {
    "uq_tenant_name": ("name", "Tenant name {value} is already in use; choose another."),
    "uq_tenant_vni": ("vni", "VXLAN VNI {value} is already in use; choose another."),
    "uq_tenant_vlan": ("vlan", "VLAN ID {value} is already in use; choose another."),
    "ck_tenant_vni_range": ("vni", "VXLAN VNI must be between 1 and 16777215."),
    "ck_tenant_vlan_range": ("vlan", "VLAN ID must be between 1 and 4094."),
    "uq_slice_tenant_id_name": ("name", "The tenant already has a slice named {value}; choose another name."),
    "uq_service_class_slice_id_name": ("name", "The slice already has a service named {value}; choose another name."),
    "uq_subscriber_tenant_id_imsi": ("imsi", "IMSI {value} is already in use in this tenant; choose another."),
    "uq_subscriber_tenant_id_ue_ip": ("ue_ip", "UE address {value} is already in use in this tenant; choose another."),
    "uq_backend_name": ("name", "Backend name {value} is already in use; choose another."),
    "uq_user_account_username": ("username", "Username {value} is already in use; choose another."),
    "fk_slice_tenant_id_tenant": ("tenant_id", "Tenant {value} does not exist."),
    "fk_subscriber_tenant_id_tenant": ("tenant_id", "Tenant {value} does not exist."),
}
_KEY_DETAIL = re.compile(
    r"^Key \((?P<cols>[^)]*)\)=\((?P<vals>.*)\) (?P<what>already exists|is not present in table "
    r'"?(?P<table>[^"]*)"?|is still referenced from table "?(?P<by>[^"]*)"?)\.?$'
)


def constraint_error(constraint: str, detail: str | None) -> FieldError:
    """The field error of a violated constraint, in words; never the database's text.

    ``detail`` is PostgreSQL's ``Key (cols)=(values) ...`` line: only the offending value (the
    last column's; the others scope it, e.g. tenant_id) is taken from it.
    """
    m = _KEY_DETAIL.match(detail or "")
    value = ""
    if m:
        # the values of the leading (scoping) columns contain no ", "; the last may (a name)
        value = m["vals"].split(", ", m["cols"].count(","))[-1]
    known = CONSTRAINTS.get(constraint)
    if known:
        field, template = known
        return FieldError(field=field, message=" ".join(template.format(value=value).split()))
    if m and m["by"]:
        return FieldError(
            field="body", message=f"still used by at least one {m['by'].replace('_', ' ')}; remove that first"
        )
    cols = [c.strip() for c in m["cols"].split(",")] if m else []
    field = cols[-1] if cols else (constraint.rsplit("_", 1)[-1] if constraint else "body")
    if m and m["table"]:
        return FieldError(field=field, message=f"{m['table'].replace('_', ' ')} {value} does not exist")
    return FieldError(
        field=field,
        message=f"{field.replace('_', ' ')} {value} is already in use; choose another"
        if m
        else "conflicts with an existing object",
    )


DB_RETRY_AFTER_S = 2  # what a client waits before retrying while the database is unreachable


def domain_status(exc: DomainError) -> int:
    """The HTTP status of a service-layer refusal (the only place that decides it)."""
    if isinstance(exc, NotFoundError):
        return 404
    if isinstance(exc, UnavailableError):
        return 503
    if isinstance(exc, ConflictError):
        return 409
    assert isinstance(exc, InvalidError | DomainError)
    return 422


def domain_headers(exc: DomainError) -> dict[str, str] | None:
    if isinstance(exc, UnavailableError | BusyError):
        return {"Retry-After": str(exc.retry_after_s)}
    return None


def domain_problem(exc: DomainError) -> ApiError:
    return ApiError(
        domain_status(exc),
        exc.title,
        exc.detail,
        errors=[FieldError(field=i.field, message=i.message, line=i.line) for i in exc.issues],
        headers=domain_headers(exc),
    )


def _problem(
    request: Request,
    status: int,
    title: str,
    detail: str,
    errors: list[FieldError],
    headers: dict[str, str] | None = None,
    extensions: dict[str, Any] | None = None,
) -> JSONResponse:
    body = Problem(title=title, status=status, detail=detail, instance=request.url.path, errors=errors)
    # RFC 9457 extension members (e.g. admission control's computation) sit beside the standard ones
    return JSONResponse(
        {**(extensions or {}), **body.model_dump()}, status_code=status, media_type=PROBLEM_JSON, headers=headers
    )


def _loc_to_field(loc: tuple[Any, ...]) -> str:
    parts = [str(p) for p in loc]
    if parts and parts[0] == "body":
        parts = parts[1:]
    return ".".join(parts) or "body"


def install(app: FastAPI) -> None:
    @app.exception_handler(ApiError)
    async def _api_error(request: Request, exc: ApiError) -> JSONResponse:
        return _problem(request, exc.status, exc.title, exc.detail, exc.errors, exc.headers)

    @app.exception_handler(DomainError)
    async def _domain(request: Request, exc: DomainError) -> JSONResponse:
        p = domain_problem(exc)
        return _problem(request, p.status, p.title, p.detail, p.errors, p.headers, getattr(exc, "extensions", None))

    async def _database_down(request: Request, exc: Exception) -> JSONResponse:
        # The database is unreachable (stopped, restarting, connection lost): nothing was
        # changed by this request; the client retries, the portal reconnects by itself.
        log.warning(
            "database unavailable during %s %s: %s",
            request.method,
            request.url.path,
            str(exc).splitlines()[0] if str(exc) else type(exc).__name__,
        )
        return _problem(
            request,
            503,
            "Database unavailable",
            "the portal's database is unreachable; retry shortly",
            [],
            {"Retry-After": str(DB_RETRY_AFTER_S)},
        )

    for db_down in (OperationalError, InterfaceError, PoolTimeoutError):
        app.add_exception_handler(db_down, _database_down)

    @app.exception_handler(RequestValidationError)
    async def _validation(request: Request, exc: RequestValidationError) -> JSONResponse:
        errors = [FieldError(field=_loc_to_field(tuple(e["loc"])), message=e["msg"]) for e in exc.errors()]
        detail = "; ".join(f"{e.field}: {e.message}" for e in errors)
        return _problem(request, 422, "Validation failed", detail, errors)

    @app.exception_handler(StarletteHTTPException)
    async def _http(request: Request, exc: StarletteHTTPException) -> JSONResponse:
        return _problem(request, exc.status_code, str(exc.detail), "", [], getattr(exc, "headers", None))

    @app.exception_handler(IntegrityError)
    async def _integrity(request: Request, exc: IntegrityError) -> JSONResponse:
        diag = getattr(exc.orig, "diag", None)
        error = constraint_error(getattr(diag, "constraint_name", None) or "", getattr(diag, "message_detail", None))
        return _problem(request, 409, "Conflict", error.message, [error])

    @app.exception_handler(DriverError)
    async def _driver(request: Request, exc: DriverError) -> JSONResponse:
        # The data plane refused or did not answer; nothing was changed by this request.
        status = 503 if isinstance(exc, UnreachableError) else 502
        detail = f"{exc.message}{'; ' + exc.hint if exc.hint else ''}"
        return _problem(request, status, "Data plane error", detail, [])

    @app.exception_handler(DataError)
    async def _data(request: Request, exc: DataError) -> JSONResponse:
        # A value the schema let through but PostgreSQL cannot store (e.g. a NUL character).
        detail = str(exc.orig).splitlines()[0] if exc.orig else "a value cannot be stored"
        return _problem(request, 422, "Validation failed", detail, [FieldError(field="body", message=detail)])

    @app.exception_handler(StaleDataError)
    async def _stale(request: Request, exc: StaleDataError) -> JSONResponse:
        detail = "the object was changed by someone else; reload it and apply your change again"
        return _problem(request, 412, "Precondition failed", detail, [FieldError(field="version", message=detail)])
