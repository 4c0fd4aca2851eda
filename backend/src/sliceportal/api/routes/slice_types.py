"""The slice-type catalogue (seed 000 Table 1), read-only for everyone."""

from __future__ import annotations

from sqlalchemy import select

from sliceportal.api.crud import page
from sliceportal.api.deps import Reader, SessionDep
from sliceportal.api.errors import not_found
from sliceportal.api.routing import session_router
from sliceportal.models import SliceType
from sliceportal.schemas.catalogue import SliceTypePublic
from sliceportal.schemas.common import ListQuery, Page, PathId

router = session_router(prefix="/slice-types", tags=["slice-types"])
SORTABLE = {
    "id": SliceType.id,
    "name": SliceType.name,
    "position": SliceType.position,
    "traffic_classes": SliceType.traffic_classes,
}


@router.get("", response_model=Page[SliceTypePublic])
def list_slice_types(_: Reader, session: SessionDep, params: ListQuery) -> Page[SliceTypePublic]:
    params = params.model_copy(update={"sort": params.sort or "position"})
    rows, count = page(session, select(SliceType), params, SORTABLE, [SliceType.name])
    return Page(data=[SliceTypePublic.model_validate(r) for r in rows], count=count)


@router.get("/{slice_type_id}", response_model=SliceTypePublic)
def read_slice_type(slice_type_id: PathId, _: Reader, session: SessionDep) -> SliceType:
    row = session.get(SliceType, slice_type_id)
    if row is None:
        raise not_found("slice type", slice_type_id)
    return row
