"""CSV subscriber imports are jobs (issue #26): a dead API worker's import is finished by the leader.

The request writes an ``import_job`` row holding the upload, the options and the actor, and
commits it; then it imports in its own process while ``jobs.Heartbeat`` renews the row's
``heartbeat_at``. The job turns ``succeeded`` in the transaction that inserts the
subscribers and writes the audit row (``import_csv``'s ``before_commit``), so a crash leaves
either a running job with nothing imported (PostgreSQL rolls back the dead worker's
transaction) or a succeeded job with everything imported, never half. A refused import
(bad rows, admission, not UTF-8, not CSV) rolls back and marks the job failed with its error.

The leading controller's ``JobResumer`` calls ``resume_stale``: a running job whose heartbeat
is older than ``jobs.STALE_S`` is imported again from the stored upload, as the original
actor, its audit row saying ``resumed_by``. The transaction importing a job holds the job's
advisory lock: a runner still importing (alive, its heartbeat lost) is never raced.
"""

from __future__ import annotations

import csv
import io
import logging
from collections.abc import Callable

from sqlalchemy import func, select, text, update
from sqlalchemy.exc import DBAPIError
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.models import ImportJob, ImportJobStatus
from sliceportal.models.audit import Actor, set_actor
from sliceportal.services import jobs
from sliceportal.services.admission import Override
from sliceportal.services.errors import DomainError
from sliceportal.services.subscriber_import import ImportResult, import_csv

log = logging.getLogger(__name__)

LOCK = 7402  # pg_advisory_xact_lock(LOCK, job id): held by the transaction importing that job
# refusals of the input itself: importing the same upload again would refuse it again
REFUSALS = (DomainError, UnicodeDecodeError, csv.Error)


def create(session: Session, data: bytes, *, actor: Actor, tenant_scope: int | None, override: Override | None) -> int:
    """The job row, committed (running, beating from now): the id of the job."""
    job = ImportJob(
        csv=data,
        options={"override": override.reason if override else None},
        actor_id=actor.user_id,
        actor=actor.name,
        via=actor.via,
        tenant_id=tenant_scope,
        status=ImportJobStatus.RUNNING,
        runner=jobs.runner_name(),
        heartbeat_at=func.clock_timestamp(),
        resumed_by="",
        error="",
    )
    session.add(job)
    session.flush()
    job_id = job.id
    session.commit()
    session.expunge(job)  # its upload is not read back
    return job_id


def lines(data: bytes) -> io.TextIOWrapper:
    # newline="" lets the csv module see quoted line breaks and stray carriage returns itself
    return io.TextIOWrapper(io.BytesIO(data), encoding="utf-8-sig", newline="")


def describe(exc: BaseException) -> str:
    """A refusal as the job's ``error`` says it (the API's problem detail for the same refusal)."""
    if isinstance(exc, DomainError):
        return exc.detail
    if isinstance(exc, UnicodeDecodeError):
        return f"the file is not UTF-8 text: {exc.reason}"
    if isinstance(exc, csv.Error):
        return f"the file is not valid CSV: {exc}"
    return f"{type(exc).__name__}: {exc}"


def _succeed(job_id: int, resumed_by: str) -> Callable[[Session, ImportResult], None]:
    def finish(session: Session, result: ImportResult) -> None:
        values: dict[str, object] = {
            "status": ImportJobStatus.SUCCEEDED,
            "finished_at": func.clock_timestamp(),
            "report": {"rows": result.rows, "imported": result.imported, "duration_s": result.duration_s},
        }
        if resumed_by:
            values["resumed_by"] = resumed_by
        done = session.execute(
            update(ImportJob)
            .where(ImportJob.id == job_id, ImportJob.status == ImportJobStatus.RUNNING)
            .values(**values)
        )
        if done.rowcount != 1:  # type: ignore[attr-defined]  # ended meanwhile: nothing of this import is kept
            raise RuntimeError(f"import job {job_id} is no longer running")

    return finish


def _fail(session: Session, job_id: int, error: str, resumed_by: str) -> None:
    values: dict[str, object] = {
        "status": ImportJobStatus.FAILED,
        "finished_at": func.clock_timestamp(),
        "error": error,
    }
    if resumed_by:
        values["resumed_by"] = resumed_by
    session.execute(
        update(ImportJob).where(ImportJob.id == job_id, ImportJob.status == ImportJobStatus.RUNNING).values(**values)
    )
    session.commit()


def _import(
    session: Session, job_id: int, data: bytes, tenant_scope: int | None, override: Override | None, resumed_by: str
) -> ImportResult:
    """Import in ``session``'s open transaction (which holds the job's lock), beating meanwhile."""
    audit: dict[str, object] = {"job": job_id}
    if resumed_by:
        audit["resumed_by"] = resumed_by
    with jobs.Heartbeat(session.get_bind(), job_id, model=ImportJob):
        text_lines = lines(data)
        try:
            return import_csv(
                session,
                text_lines,
                tenant_scope=tenant_scope,
                override=override,
                audit=audit,
                before_commit=_succeed(job_id, resumed_by),
            )
        except REFUSALS as exc:
            session.rollback()
            _fail(session, job_id, describe(exc), resumed_by)
            raise
        finally:
            text_lines.detach()


def run(
    session: Session, job_id: int, data: bytes, *, tenant_scope: int | None, override: Override | None
) -> ImportResult:
    """The request's part: import the job's upload now, in this process.

    A refusal marks the job failed and is raised as ``import_csv`` raises it; any other error
    (the database away) leaves the job running: the leader imports it again once stale.
    """
    session.execute(text("SELECT pg_advisory_xact_lock(:k, CAST(:id AS int))"), {"k": LOCK, "id": job_id})
    return _import(session, job_id, data, tenant_scope, override, "")


def resume(session: Session, job_id: int, by: str) -> bool:
    """Import a stale job again as its actor; False when it is not stale or another holds it."""
    if not session.scalar(text("SELECT pg_try_advisory_xact_lock(:k, CAST(:id AS int))"), {"k": LOCK, "id": job_id}):
        session.rollback()  # its runner is still importing (only its heartbeat is lost), or another resumer
        return False
    job = session.scalar(select(ImportJob).where(ImportJob.id == job_id, jobs.stale(model=ImportJob)))
    if job is None:  # ended, or beating again, since the pass looked
        session.rollback()
        return False
    data, tenant_scope, reason = job.csv, job.tenant_id, job.options.get("override")
    log.warning("import job %d of %s: its runner %s is gone; importing it again", job_id, job.actor, job.runner)
    set_actor(session, Actor(job.actor_id, job.actor, job.via))
    session.expunge(job)
    try:
        _import(session, job_id, data, tenant_scope, Override(reason) if reason else None, by)
    except REFUSALS as exc:  # the data changed meanwhile (a conflicting subscriber): the job says why
        log.warning("import job %d failed when resumed: %s", job_id, describe(exc))
    finally:
        session.info.pop("actor", None)
    return True


def resume_stale(sessions: sessionmaker[Session], by: str) -> int:
    """One pass of the leader's duty: every stale import job, oldest first; how many ended."""
    resumed = 0
    with sessions() as session:
        ids = list(session.scalars(select(ImportJob.id).where(jobs.stale(model=ImportJob)).order_by(ImportJob.id)))
        session.rollback()
        for job_id in ids:
            try:
                resumed += resume(session, job_id, by)
            except DBAPIError:
                session.rollback()
                raise  # the database, not the job: the whole pass failed
            except Exception as exc:  # a bug would fail every pass the same way: the job ends failed
                log.exception("resuming import job %d failed", job_id)
                session.rollback()
                _fail(session, job_id, describe(exc), by)
                resumed += 1
    return resumed
