"""Generic resource helpers: tenant scoping, paging / sorting / search, versions, changes."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, TypeVar

from fastapi import Response
from sqlalchemy import ColumnElement, Select, false, func, or_, select
from sqlalchemy.orm import QueryableAttribute, Session
from sqlalchemy.sql.base import ExecutableOption

from sliceportal.api.errors import ApiError, not_found
from sliceportal.schemas.common import ListParams

M = TypeVar("M")
Column = ColumnElement[Any] | QueryableAttribute[Any]


def scoped(stmt: Select[Any], model: type[Any], tenant_scope: int | None) -> Select[Any]:
    """Restrict a query to one tenant's rows; other tenants' objects simply do not exist."""
    if tenant_scope is None:
        return stmt
    column = getattr(model, "tenant_column", None)
    if column is None:
        raise ApiError(403, "Forbidden", "tenants cannot see this")
    return stmt.where(getattr(model, column) == tenant_scope)


def page(
    session: Session,
    stmt: Select[Any],
    params: ListParams,
    sortable: Mapping[str, Column],
    search: Iterable[Column] = (),
) -> tuple[list[Any], int]:
    """One page of ``stmt``'s objects (its first entity) and the count of all that match."""
    ordered, count = _paged(session, stmt, params, sortable, search)
    return list(session.scalars(ordered).unique().all()), count


def page_rows(
    session: Session,
    stmt: Select[Any],
    params: ListParams,
    sortable: Mapping[str, Column],
    search: Iterable[Column] = (),
) -> tuple[list[Any], int]:
    """``page`` for a select of columns: rows, not ORM objects (a hot list answers from
    columns without building, tracking and discarding an object per row)."""
    ordered, count = _paged(session, stmt, params, sortable, search)
    return list(session.execute(ordered).all()), count


def _paged(
    session: Session, stmt: Select[Any], params: ListParams, sortable: Mapping[str, Column], search: Iterable[Column]
) -> tuple[Select[Any], int]:
    if params.q:
        escaped = params.q.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
        pattern = f"%{escaped}%"
        stmt = stmt.where(or_(false(), *(col.ilike(pattern) for col in search)))
    count = session.scalar(select(func.count()).select_from(stmt.order_by(None).subquery())) or 0
    order: list[Any] = []
    if params.sort:
        key = params.sort.lstrip("-")
        if key not in sortable:
            raise ApiError(422, "Validation failed", f"cannot sort by {key!r}; one of {sorted(sortable)}", field="sort")
        order.append(sortable[key].desc() if params.sort.startswith("-") else sortable[key].asc())
    order.append(sortable["id"].asc())
    return stmt.order_by(*order).offset(params.offset).limit(params.limit), count


def get_scoped(
    session: Session, model: type[M], ident: int, tenant_scope: int | None, what: str, *options: ExecutableOption
) -> M:
    """``options``: loader options (e.g. joined loads of collections, hence ``unique()``)."""
    stmt = scoped(select(model).options(*options).where(model.id == ident), model, tenant_scope)  # type: ignore[attr-defined]
    obj: M | None = session.scalars(stmt).unique().first()
    if obj is None:
        raise not_found(what, ident)
    return obj


def check_scoped(session: Session, model: type[Any], ident: int, tenant_scope: int | None, what: str) -> None:
    """That object ``ident`` exists for this principal (404 otherwise), for routes that need
    only that: loading it would load its eager relationships too (a slice's: three queries)."""
    if session.scalar(scoped(select(model.id).where(model.id == ident), model, tenant_scope)) is None:
        raise not_found(what, ident)


def etag(response: Response, obj: Any) -> None:
    response.headers["ETag"] = f'"{obj.version}"'


def _if_match_version(if_match: str) -> int:
    wanted = if_match.strip().removeprefix("W/").strip('"')
    if not wanted.isdigit() or len(wanted) > 18:
        raise ApiError(400, "Bad request", "If-Match must be an ETag returned by this API", field="If-Match")
    return int(wanted)


def check_version(obj: Any, if_match: str | None, body_version: int | None) -> None:
    """Optimistic concurrency: an update must name the version it was based on."""
    expected: int | None = body_version
    if if_match is not None:
        expected = _if_match_version(if_match)
        if body_version is not None and body_version != expected:
            # Two different answers to "which version did you read": neither can be trusted.
            raise ApiError(
                422,
                "Validation failed",
                f"If-Match names version {expected} but the body's "
                f"version is {body_version}; send one, or the same in both",
                field="version",
            )
    if expected is None:
        raise ApiError(
            428,
            "Precondition required",
            "send the version you read (field 'version' or an If-Match header) with every update",
            field="version",
        )
    if expected != obj.version:
        raise ApiError(
            412,
            "Precondition failed",
            f"the object is at version {obj.version}, your change was based on {expected}; "
            "reload it and apply your change again",
            field="version",
        )


def check_delete_version(obj: Any, if_match: str | None) -> None:
    """A DELETE with If-Match deletes only the version the client read (412 otherwise)."""
    if if_match is None:
        return
    expected = _if_match_version(if_match)
    if expected != obj.version:
        raise ApiError(
            412,
            "Precondition failed",
            f"the object is at version {obj.version}, not {expected}; reload it before deleting",
            field="If-Match",
        )


def apply_changes(obj: Any, changes: Mapping[str, Any], not_null: Iterable[str]) -> None:
    for key in not_null:
        if key in changes and changes[key] is None:
            raise ApiError(422, "Validation failed", f"{key} cannot be null", field=key)
    for key, value in changes.items():
        setattr(obj, key, value)
