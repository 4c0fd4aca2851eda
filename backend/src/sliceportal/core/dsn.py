"""Which database the portal uses: ``DATABASE_URL``, or the embedded cluster under the data
directory. Every process resolves it the same way (the run command, its controller and
API workers, an ASGI server started by hand), so it lives here, below them all."""

from __future__ import annotations

import os
from pathlib import Path

from sliceportal.core.config import Settings, get_settings
from sliceportal.core.pgembed import EmbeddedPostgres

# Set by the run command for the processes it starts: the URL it resolved (and started).
RESOLVED_ENV = "SLICEPORTAL_DATABASE_URL_RESOLVED"


def embedded(settings: Settings | None = None) -> EmbeddedPostgres | None:
    """The embedded cluster, unless DATABASE_URL points elsewhere."""
    settings = settings or get_settings()
    return None if settings.database_url else EmbeddedPostgres(Path(settings.data_dir) / "postgres")


def database_url(start_embedded: bool = True, settings: Settings | None = None) -> str:
    """The run command's resolved URL, DATABASE_URL, or the embedded cluster (started on demand)."""
    resolved = os.environ.get(RESOLVED_ENV)
    if resolved:
        return resolved
    settings = settings or get_settings()
    pg = embedded(settings)
    if pg is None:
        return settings.database_url or ""
    if start_embedded:
        pg.start()
    return pg.url()
