"""The frontend's typed client is generated from frontend/openapi.json: it must be the API's."""

from __future__ import annotations

import json
from pathlib import Path

from sliceportal.api.main import create_app
from sliceportal.core.config import Settings

COMMITTED = Path(__file__).resolve().parents[3] / "frontend" / "openapi.json"


def test_frontend_openapi_is_current() -> None:
    spec = create_app(Settings(), "postgresql+psycopg://unused@/unused").openapi()
    assert json.loads(COMMITTED.read_text()) == json.loads(json.dumps(spec)), (
        "frontend/openapi.json is stale: run `.venv/bin/sliceportal openapi > frontend/openapi.json` and rebuild"
    )
