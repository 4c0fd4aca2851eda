"""Fault-test fixtures: a real API worker process, as ``sliceportal run`` starts N of them."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import httpx
import pytest

from sliceportal.core.config import Settings
from sliceportal_testbed.processes import free_port
from tests.factories import wait_until

WORKER = """
import sys, uvicorn
from sliceportal.api.main import create_app
from sliceportal.core.config import Settings
app = create_app(Settings(secret_key=sys.argv[1], reconcile_interval_s=0), sys.argv[2])
uvicorn.run(app, host="127.0.0.1", port=int(sys.argv[3]), log_level="warning")
"""


@pytest.fixture
def worker(db_url: str, settings: Settings) -> Iterator[tuple[subprocess.Popen[bytes], str]]:
    """An API worker process serving the test's database; killed at the end if still alive."""
    port = free_port()
    base = f"http://127.0.0.1:{port}"
    proc = subprocess.Popen(
        [sys.executable, "-c", WORKER, settings.secret_key, db_url, str(port)],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:

        def serves() -> bool:
            assert proc.poll() is None, f"the worker exited with {proc.returncode}"
            try:
                return httpx.get(f"{base}/api/v1/health", timeout=2).status_code == 200
            except httpx.TransportError:
                return False

        # its imports alone take ~7 s at load 7 on 2 cores; 60 s was once not enough under a full run
        wait_until("the API worker serves", serves, 120)
        yield proc, base
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait(timeout=20)
