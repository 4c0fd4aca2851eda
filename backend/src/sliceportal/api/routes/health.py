"""Liveness and readiness: ``/health`` open without a token, ``/health/detail`` for operators.

``status`` is ``ok`` when the database answers, a controller leads (its heartbeat is
fresh) and every background loop is alive, ``degraded`` otherwise. The public answer says
only that and whether the database answers (it works while the database is down); the
detail names the cause: the controller (host, pid), each loop and its last error -- what
an anonymous client must not learn of the host (#27). The loops are the leader's, as its
last heartbeat reported them, or this process's own when it leads.
"""

from __future__ import annotations

import os
import socket
from datetime import datetime

from fastapi import Request, Response
from pydantic import BaseModel, Field
from sqlalchemy.exc import DBAPIError, ProgrammingError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError
from sqlalchemy.orm import Session

from sliceportal import __version__
from sliceportal.api.deps import CurrentUser
from sliceportal.api.errors import ApiError
from sliceportal.api.routing import session_router
from sliceportal.control import state
from sliceportal.core.db import engine_for
from sliceportal.models import Role

router = session_router(tags=["health"])


class LoopHealthPublic(BaseModel):
    name: str
    alive: bool = Field(description="succeeded within three periods (plus its allowed backoff), or just started")
    running: bool = Field(description="its thread is running (a dead one is restarted within a second)")
    period_s: float
    last_success: datetime | None
    last_error: str
    last_error_at: datetime | None
    consecutive_failures: int
    restarts: int


class ControllerPublic(BaseModel):
    """The controller process that leads: it runs the reconciler, the health prober and the testbed."""

    host: str
    pid: int
    since: datetime = Field(description="when it got the lease")
    last_beat: datetime
    beat_age_s: float = Field(description="seconds since its last heartbeat (database clock)")
    alive: bool = Field(description="its heartbeat is younger than three lease periods")
    period_s: float = Field(description="lease period: a successor takes over within it when the leader dies")


class HealthStatus(BaseModel):
    """What anyone may know: up or not (load balancers, the portal's offline banner)."""

    status: str = Field(description="ok, or degraded when the database, the controller or a loop is down")
    database: str = Field(description="ok, or down")


class HealthPublic(HealthStatus):
    version: str
    database_detail: str = ""
    controller: ControllerPublic | None = Field(
        None, description="who leads; null: no controller ever did, or the database is down"
    )
    loops: list[LoopHealthPublic] = []


def _database(url: str) -> tuple[str, str, state.Leader | None]:
    """Whether the database answers, and who leads (one connection, one query: the leader's heartbeat)."""
    try:
        with engine_for(url).connect() as conn, Session(bind=conn) as session:
            try:
                return "ok", "", state.leader(session)
            except ProgrammingError:  # the schema predates the controller (not migrated yet)
                session.rollback()
                return "ok", "", None
    except (DBAPIError, PoolTimeoutError) as exc:
        return "down", (str(getattr(exc, "orig", None) or exc).splitlines() or [""])[0], None


def _local_loops() -> list[LoopHealthPublic]:
    return [LoopHealthPublic.model_validate(r) for r in state.loop_records()]


def _health(request: Request, response: Response) -> HealthPublic:
    database, detail, leader = _database(request.app.state.database_url)
    controller = None
    loops = _local_loops()
    if leader is not None:
        controller = ControllerPublic(
            host=leader.host,
            pid=leader.pid,
            since=leader.since,
            last_beat=leader.beat_at,
            beat_age_s=round(leader.age_s, 3),
            alive=leader.alive,
            period_s=leader.period_s,
        )
        if (leader.host, leader.pid) != (socket.gethostname(), os.getpid()):
            loops = [LoopHealthPublic.model_validate(r) for r in leader.loops]  # another process leads
    ok = database == "ok" and controller is not None and controller.alive and all(lp.alive for lp in loops)
    if database != "ok":
        response.status_code = 503
        response.headers["Retry-After"] = "2"
    return HealthPublic(
        status="ok" if ok else "degraded",
        version=__version__,
        database=database,
        database_detail=detail,
        controller=controller,
        loops=loops,
    )


@router.get("/health", response_model=HealthStatus)
def health(request: Request, response: Response) -> HealthStatus:
    """Up or not, for anyone: no host name, pid, version or loop errors (``/health/detail``)."""
    full = _health(request, response)
    return HealthStatus(status=full.status, database=full.database)


@router.get("/health/detail", response_model=HealthPublic, responses={403: {"description": "operators only"}})
def health_detail(principal: CurrentUser, request: Request, response: Response) -> HealthPublic:
    """Who leads, each background loop and its last error (operators)."""
    if principal.role is not Role.OPERATOR or principal.key_tenant_id is not None:
        raise ApiError(403, "Forbidden", "only operators see the health detail; GET /health says up or not")
    return _health(request, response)
