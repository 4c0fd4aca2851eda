"""ASGI entry point for uvicorn / production servers (set DATABASE_URL there)."""

from __future__ import annotations

import os

from sliceportal.api.main import create_app
from sliceportal.cli import database_url
from sliceportal.core.config import get_settings

app = create_app(get_settings(),
                 os.environ.get("SLICEPORTAL_DATABASE_URL_RESOLVED") or database_url(start_embedded=False))
