"""The FastAPI application: every router of API v1, the error format, the built frontend."""

from __future__ import annotations

import asyncio
import re
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlsplit

from fastapi import FastAPI, Request
from fastapi.middleware.cors import CORSMiddleware
from fastapi.responses import FileResponse
from fastapi.staticfiles import StaticFiles

from sliceportal import __version__
from sliceportal.api import docs, errors, lifecycle, principals
from sliceportal.api.middleware import SecurityMiddleware
from sliceportal.api.ratelimit import ExpensiveLimiter
from sliceportal.api.responses import problem_openapi
from sliceportal.api.routes import (
    audit,
    backends,
    deployments,
    health,
    intents,
    kpis,
    login,
    metrics,
    rule_sets,
    slice_types,
    slices,
    subscribers,
    telemetry,
    tenants,
    users,
)
from sliceportal.api.routes import testbed as testbed_routes
from sliceportal.api.routing import API_PREFIX, SessionRouter, include
from sliceportal.core import gc_policy
from sliceportal.core.config import Settings
from sliceportal.core.db import autocommit_sessions, session_factory
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.notify import start_listener
from sliceportal.services import backends as backends_service
from sliceportal.services import fanout_pool
from sliceportal.services.backends import POOL


def api_routers() -> list[SessionRouter]:
    """The API's routers, in the order their routes are tried (the first full match wins)."""
    modules = (health, login, users, slice_types, tenants, slices, subscribers, backends, deployments, intents)
    routers = [m.router for m in modules]
    routers += [kpis.router, telemetry.router, audit.router, testbed_routes.router]
    # POST /slices/{id}/deploy: the fan-out to the slice's backends
    return [*routers, users.keys, rule_sets.router, deployments.slices]


def create_app(settings: Settings, database_url: str) -> FastAPI:
    @asynccontextmanager
    async def lifespan(app: FastAPI) -> AsyncIterator[None]:
        gc_policy.apply()
        await asyncio.to_thread(lifecycle.end_interrupted, app)
        # the driver plugins (grpc, protobuf, libbpf bindings) are imported before the first
        # request, not by it: on a busy host that import held the first registration ~4 s
        await asyncio.to_thread(backends_service.registry)
        # points ingested by any process reach this one's KPI streams (kpi/notify.py); stopped first
        app.state.kpi_listener = await asyncio.to_thread(start_listener, database_url, app.state.kpi_hub)
        app.state.on_shutdown.insert(0, app.state.kpi_listener.stop)
        # credentials are remembered only while this process hears of changes (api/principals.py)
        app.state.auth_listener = await asyncio.to_thread(principals.start_listener, database_url, app.state.principals)
        app.state.on_shutdown.insert(0, app.state.auth_listener.stop)
        # the reconciler, the health prober and the testbed run in the controller process
        # (control/controller.py): any number of these workers serve the same database
        try:
            yield
        finally:
            POOL.close_all()
            fanout_pool.shutdown()
            for hook in app.state.on_shutdown:
                hook()

    app = FastAPI(
        lifespan=lifespan,
        title="sliceportal",
        version=__version__,
        summary="QoS-aware network slicing on programmable data planes",
        openapi_url=f"{API_PREFIX}/openapi.json",
        docs_url=None,  # api/docs.py: local assets, login required
        redoc_url=None,
        # operation ids a client generator turns into method names: the handler's own name
        # (unique across the API; tests/api/test_openapi_conventions.py keeps it so)
        generate_unique_id_function=lambda route: route.name,
    )
    app.state.settings = settings
    app.state.database_url = database_url
    app.state.sessionmaker = session_factory(database_url)
    app.state.read_sessionmaker = autocommit_sessions(app.state.sessionmaker)
    app.state.kpi_hub = KpiHub()
    app.state.principals = principals.PrincipalCache()
    app.state.expensive_limiter = ExpensiveLimiter(settings)
    # what the process that serves the app must release last (the run command's embedded cluster)
    app.state.on_shutdown = []
    errors.install(app)
    app.openapi = lambda: problem_openapi(app)  # type: ignore[method-assign]
    app.add_middleware(SecurityMiddleware, settings=settings)
    _allow_origins(app, settings.cors_origins)
    app.add_middleware(metrics.RequestTimer)  # outermost: a request's whole time, by route
    # each router under the prefix on the app itself, not through one /api/v1 router: FastAPI
    # (0.165) matches a request once per level of included routers and again in each
    # level's handler: the level less is 75-200 us less CPU a request
    for router in api_routers():
        include(app, router, API_PREFIX)
    include(app, metrics.router)
    docs.install(app, API_PREFIX)
    _unknown_api_paths(app)
    if settings.frontend_dist is not None:
        _serve_frontend(app, settings.frontend_dist)
    return app


CORS_HEADERS = ["Authorization", "Content-Type", "X-API-Key", "If-Match", "Idempotency-Key", "Admission-Override"]


def _allow_origins(app: FastAPI, origins: list[str]) -> None:
    """CORS_ORIGINS: browser pages of exactly these origins may call the API (with a bearer token
    or API key; never with the refresh cookie, which is SameSite=Strict). Empty: none but the
    portal's own, as browsers enforce without any header."""
    if not origins:
        return
    for origin in origins:
        parts = urlsplit(origin)
        if origin == "*" or parts.scheme not in ("http", "https") or not parts.netloc or parts.path or parts.query:
            raise ValueError(f"CORS_ORIGINS: {origin!r} is not an origin (scheme://host[:port], no wildcard)")
    app.add_middleware(
        CORSMiddleware,
        allow_origins=origins,
        allow_credentials=False,
        allow_methods=["GET", "POST", "PUT", "PATCH", "DELETE"],
        allow_headers=CORS_HEADERS,
        expose_headers=["ETag", "Retry-After", "Location", "Idempotent-Replayed"],
        max_age=600,
    )


def _unknown_api_paths(app: FastAPI) -> None:
    """Any other /api/... path is a 404 problem, for every method, not the single page; a
    known path with a method it lacks stays a 405 with its Allow header.

    The path's methods come from the OpenAPI document, the API's published contract: asking
    the router instead (which routes match the path but not the method) means walking
    FastAPI's nested routers, which 0.165 keeps as private ``_IncludedRouter`` objects."""

    documented: list[tuple[re.Pattern[str], bool, set[str]]] = []

    def methods_at(path: str) -> set[str]:
        """The methods the OpenAPI document gives this concrete path. A literal path
        (/users/me) is its own resource, not the parameterised one beside it (/users/{id})."""
        if not documented:
            for template, ops in app.openapi()["paths"].items():
                pattern = re.compile("^" + re.sub(r"\\\{[^}]+\\\}", "[^/]+", re.escape(template)) + "$")
                documented.append((pattern, "{" not in template, {m.upper() for m in ops}))
        hits = [(literal, methods) for pattern, literal, methods in documented if pattern.match(path)]
        if any(literal for literal, _ in hits):
            hits = [h for h in hits if h[0]]
        return set().union(*(methods for _, methods in hits)) if hits else set()

    @app.api_route(
        f"{API_PREFIX.rsplit('/', 1)[0]}/{{path:path}}",
        include_in_schema=False,
        methods=["GET", "HEAD", "POST", "PUT", "PATCH", "DELETE", "OPTIONS"],
    )
    async def unknown(path: str, request: Request) -> None:  # no I/O: answered on the event loop
        allow = methods_at(request.url.path)
        if allow:
            raise errors.ApiError(
                405,
                "Method Not Allowed",
                f"{request.method} is not allowed here",
                headers={"Allow": ", ".join(sorted(allow))},
            )
        raise errors.ApiError(404, "Not found", f"no API endpoint /api/{path}")


def _serve_frontend(app: FastAPI, dist: Path) -> None:
    if not (dist / "index.html").exists():
        return
    app.mount("/assets", StaticFiles(directory=dist / "assets"), name="assets")

    @app.get("/{path:path}", include_in_schema=False)
    def spa(path: str) -> FileResponse:
        # Client-side routes all load the single page; real files are served as they are.
        found = _file_under(dist, path) if path else None
        return FileResponse(found or dist / "index.html")


def _file_under(root: Path, path: str) -> Path | None:
    """The file ``path`` names inside ``root``, if any; a name the file system refuses (too long,
    not encodable) names none -- its exception here was a 500 (#27)."""
    try:
        candidate = (root / path).resolve()
        return candidate if candidate.is_file() and root.resolve() in candidate.parents else None
    except (OSError, ValueError):
        return None
