"""A CSV subscriber import as a job (issue #26): what ``GET /subscribers/import-jobs/{id}`` answers."""

from __future__ import annotations

from datetime import datetime

from pydantic import BaseModel, ConfigDict

from sliceportal.schemas.subscribers import ImportReport


class ImportJobPublic(BaseModel):
    model_config = ConfigDict(from_attributes=True)

    id: int
    status: str  # running / succeeded / failed
    actor: str  # who sent the file (a resumed job imports as this user)
    tenant_id: int | None  # the sender's tenant scope; None: all tenants
    runner: str  # host:pid of the process that took the request
    heartbeat_at: datetime | None
    resumed_by: str  # host:pid of the controller that imported it again, when its runner died
    created_at: datetime
    finished_at: datetime | None
    report: ImportReport | None  # when succeeded
    error: str  # when failed: the refusal's detail (the same as the synchronous answer's)
