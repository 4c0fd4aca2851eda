"""The FastAPI application: every router of API v1, the error format, the built frontend."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path

from fastapi import APIRouter, FastAPI
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from sliceportal import __version__
from sliceportal.api import errors
from sliceportal.api.routes import (
    audit,
    backends,
    deployments,
    health,
    intents,
    kpis,
    login,
    metrics,
    slice_types,
    slices,
    subscribers,
    tenants,
    users,
)
from sliceportal.api.routes import testbed as testbed_routes
from sliceportal.core.config import REPO_ROOT, Settings
from sliceportal.core.db import session_factory
from sliceportal.kpi.hub import KpiHub
from sliceportal.services.backends import POOL
from sliceportal.services.reconciler import Reconciler
from sliceportal.testbed.live import LiveTestbed

API_PREFIX = "/api/v1"
FRONTEND_DIST = REPO_ROOT / "frontend" / "dist"


def api_router() -> APIRouter:
    router = APIRouter(prefix=API_PREFIX)
    for module in (health, login, users, slice_types, tenants, slices, subscribers, backends, deployments, intents,
                   kpis, audit, testbed_routes):
        router.include_router(module.router)
    router.include_router(users.keys)
    return router


def create_app(settings: Settings, database_url: str) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        reconciler = testbed = None
        if settings.testbed:
            testbed = LiveTestbed(app.state.sessionmaker, app.state.kpi_hub, prefix=settings.testbed_prefix,
                                  rate_pps=settings.testbed_rate_pps)
            app.state.testbed = testbed  # the testbed route's state and congestion scenario
            await asyncio.to_thread(testbed.start)
        if settings.reconcile_interval_s > 0:
            reconciler = Reconciler(app.state.sessionmaker, settings.reconcile_interval_s)
            reconciler.start()
        yield
        if reconciler is not None:
            reconciler.stop()
        if testbed is not None:
            await asyncio.to_thread(testbed.stop)
        POOL.close_all()
        for hook in app.state.on_shutdown:
            hook()

    app = FastAPI(
        lifespan=lifespan,
        title="sliceportal",
        version=__version__,
        summary="QoS-aware network slicing on programmable data planes",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=f"{API_PREFIX}/docs",
        redoc_url=None,
    )
    app.state.settings = settings
    app.state.database_url = database_url
    app.state.sessionmaker = session_factory(database_url)
    app.state.kpi_hub = KpiHub()
    # what the process that serves the app must release last (the run command's embedded cluster)
    app.state.on_shutdown = []
    errors.install(app)
    app.include_router(api_router())
    app.include_router(metrics.router)
    _serve_frontend(app, FRONTEND_DIST)
    return app


def _serve_frontend(app: FastAPI, dist: Path) -> None:
    if not (dist / "index.html").exists():
        return
    app.mount("/assets", StaticFiles(directory=dist / "assets"), name="assets")

    @app.get("/{path:path}", include_in_schema=False)
    def spa(path: str) -> FileResponse:
        # Client-side routes all load the single page; real files are served as they are.
        candidate = (dist / path).resolve()
        if path and candidate.is_file() and dist.resolve() in candidate.parents:
            return FileResponse(candidate)
        return FileResponse(dist / "index.html")
