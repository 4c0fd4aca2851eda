"""Fault-test fixtures: a real API worker process, as ``sliceportal run`` starts N of them."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator

import pytest

from sliceportal.core.config import Settings
from tests.factories import api_worker


@pytest.fixture
def worker(db_url: str, settings: Settings) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """An API worker process serving the test's database: (process, base URL)."""
    with api_worker(db_url, settings) as w:
        yield w
