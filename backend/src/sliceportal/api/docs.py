"""The interactive API docs (Swagger UI), from the swagger-ui-bundle package's local files.

No CDN: the page works offline and under the app's strict CSP (its start-up code is a
separate script file, not an inline one). The page is served to an authenticated principal
(Bearer token or API key) unless the operator sets ``docs_public``.
"""

from __future__ import annotations

from typing import Annotated

from fastapi import APIRouter, Depends, FastAPI, Header, Request
from fastapi.responses import HTMLResponse, Response
from fastapi.security import OAuth2PasswordBearer
from fastapi.staticfiles import StaticFiles
from swagger_ui_bundle import swagger_ui_path  # type: ignore[import-untyped]

from sliceportal.api.deps import SessionDep, SettingsDep, authenticate, get_secret
from sliceportal.api.routing import session_router

_bearer = OAuth2PasswordBearer(tokenUrl="/api/v1/login/access-token", auto_error=False)

PAGE = """<!doctype html>
<html lang="en"><head><meta charset="utf-8"><title>sliceportal API</title>
<link rel="stylesheet" href="{base}/docs/assets/swagger-ui.css"></head>
<body><div id="swagger-ui"></div>
<script src="{base}/docs/assets/swagger-ui-bundle.js"></script>
<script src="{base}/docs/init.js"></script></body></html>
"""
INIT = """window.ui = SwaggerUIBundle({{url: "{base}/openapi.json", dom_id: "#swagger-ui",
  deepLinking: true, presets: [SwaggerUIBundle.presets.apis], layout: "BaseLayout"}});
"""


def docs_router(base: str) -> APIRouter:
    router = session_router(include_in_schema=False)

    def allowed(
        request: Request,
        session: SessionDep,
        settings: SettingsDep,
        token: Annotated[str | None, Depends(_bearer)],
        x_api_key: Annotated[str | None, Header()] = None,
    ) -> None:
        if not settings.docs_public:
            authenticate(session, get_secret(request), token, x_api_key)

    @router.get(f"{base}/docs", dependencies=[Depends(allowed)])
    def docs() -> HTMLResponse:
        return HTMLResponse(PAGE.format(base=base))

    @router.get(f"{base}/docs/init.js")
    def init() -> Response:
        return Response(INIT.format(base=base), media_type="text/javascript")

    return router


def install(app: FastAPI, base: str) -> None:
    app.mount(f"{base}/docs/assets", StaticFiles(directory=swagger_ui_path), name="docs-assets")
    app.include_router(docs_router(base))
