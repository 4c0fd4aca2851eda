"""Fixtures shared by the KPI tests that need a second portal process on the same database."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from fastapi.testclient import TestClient
from sqlalchemy.orm import Session

from sliceportal.core.config import Settings
from tests.factories import api_worker, backend_row, red_and_blue


@pytest.fixture
def worker_a(db_url: str, settings: Settings) -> Iterator[str]:
    """Worker A: an API worker process on the test's database, beside the app under test; its base URL."""
    with api_worker(db_url, settings) as (_, base):
        yield base


@pytest.fixture
def tenants(client: TestClient, session: Session, op: dict[str, str]) -> dict[str, int]:
    """Slices of two tenants (red, blue) and one backend; ids by name."""
    ids = {name: sid for name, (_, sid) in red_and_blue(client, session, op, {"max_loss_pct": 1}).items()}
    return ids | {"backend": backend_row(session)}
