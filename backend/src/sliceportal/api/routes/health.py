"""Liveness and readiness, open without a token."""

from __future__ import annotations

from fastapi import APIRouter
from pydantic import BaseModel
from sqlalchemy import text

from sliceportal import __version__
from sliceportal.api.deps import SessionDep

router = APIRouter(tags=["health"])


class HealthPublic(BaseModel):
    status: str
    version: str
    database: str


@router.get("/health", response_model=HealthPublic)
def health(session: SessionDep) -> HealthPublic:
    session.execute(text("SELECT 1"))
    return HealthPublic(status="ok", version=__version__, database="ok")
