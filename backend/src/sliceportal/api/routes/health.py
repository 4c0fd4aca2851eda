"""Liveness and readiness, open without a token; answers while the database is down.

``status`` is ``ok`` when the database answers and every background loop is alive,
``degraded`` otherwise; ``database`` and each loop say which dependency is the cause.
"""

from __future__ import annotations

from datetime import datetime

from fastapi import APIRouter, Request, Response
from pydantic import BaseModel, Field
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError
from sqlalchemy.exc import TimeoutError as PoolTimeoutError

from sliceportal import __version__
from sliceportal.core.db import engine_for
from sliceportal.core.loops import LOOPS

router = APIRouter(tags=["health"])


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


class HealthPublic(BaseModel):
    status: str = Field(description="ok, or degraded when the database or a loop is down")
    version: str
    database: str = Field(description="ok, or down")
    database_detail: str = ""
    loops: list[LoopHealthPublic] = []


def _database(url: str) -> tuple[str, str]:
    try:
        with engine_for(url).connect() as conn:
            conn.execute(text("SELECT 1"))
        return "ok", ""
    except (DBAPIError, PoolTimeoutError) as exc:
        return "down", (str(getattr(exc, "orig", None) or exc).splitlines() or [""])[0]


@router.get("/health", response_model=HealthPublic)
def health(request: Request, response: Response) -> HealthPublic:
    database, detail = _database(request.app.state.database_url)
    loops = []
    for status in LOOPS.statuses():
        loop = LOOPS.get(status.name)
        loops.append(LoopHealthPublic(
            name=status.name, alive=status.alive(), running=loop is not None and loop.running,
            period_s=status.period_s, last_success=status.last_success, last_error=status.last_error,
            last_error_at=status.last_error_at, consecutive_failures=status.consecutive_failures,
            restarts=status.restarts))
    ok = database == "ok" and all(lp.alive for lp in loops)
    if database != "ok":
        response.status_code = 503
        response.headers["Retry-After"] = "2"
    return HealthPublic(status="ok" if ok else "degraded", version=__version__, database=database,
                        database_detail=detail, loops=loops)
