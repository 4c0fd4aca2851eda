"""The job record of a CSV subscriber import (issue #26): the upload is kept until the import ends."""

from __future__ import annotations

from datetime import datetime
from typing import Any

from sqlalchemy import BigInteger, Index, LargeBinary, String, Text, text
from sqlalchemy.dialects.postgresql import JSONB
from sqlalchemy.orm import Mapped, mapped_column

from sliceportal.models.base import Base, IdMixin, TimestampMixin
from sliceportal.models.deployments import DeploymentStatus

ImportJobStatus = DeploymentStatus  # running / succeeded / failed, the same words as a deploy's


class ImportJob(IdMixin, TimestampMixin, Base):
    """A subscriber import as a job: ``runner`` (host:pid) renews ``heartbeat_at`` while it runs;
    a stale heartbeat means the runner died and the leading controller imports ``csv`` again as
    the original actor (``resumed_by``; services/import_jobs.py). The status becomes
    ``succeeded`` in the transaction that inserts the subscribers, so a crash leaves either a
    running job and nothing imported, or a finished job and everything imported."""

    __tablename__ = "import_job"
    __table_args__ = (Index("ix_import_job_running", "heartbeat_at", postgresql_where=text("status = 'running'")),)

    status: Mapped[ImportJobStatus] = mapped_column(String(20), default=ImportJobStatus.RUNNING)
    csv: Mapped[bytes] = mapped_column(LargeBinary)
    # the request's options: {"override": reason or null}
    options: Mapped[dict[str, Any]] = mapped_column(JSONB, default=dict)
    actor_id: Mapped[int | None] = mapped_column(BigInteger)
    actor: Mapped[str] = mapped_column(String(120), default="")
    via: Mapped[str] = mapped_column(String(60), default="")
    # the requester's tenant scope (None = all tenants): the rows it may import, who may read the job
    tenant_id: Mapped[int | None] = mapped_column(BigInteger, index=True)
    runner: Mapped[str] = mapped_column(String(200), default="")
    heartbeat_at: Mapped[datetime | None] = mapped_column()
    resumed_by: Mapped[str] = mapped_column(String(200), default="")
    finished_at: Mapped[datetime | None] = mapped_column()
    report: Mapped[dict[str, Any] | None] = mapped_column(JSONB)
    error: Mapped[str] = mapped_column(Text, default="")
