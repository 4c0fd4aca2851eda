"""The Rust engine's own tests (dataplane/bmv2/engine: loading p4c's slicing.json, refusing
unsupported constructs by name) run with the rest of the suite where cargo is installed."""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest

ENGINE = Path(__file__).resolve().parents[1] / "engine"


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("cargo") is None, reason="needs cargo (Rust) on PATH")
def test_engine_loads_the_compiled_program_and_refuses_unsupported_constructs() -> None:
    run = subprocess.run(["cargo", "test", "--quiet"], cwd=ENGINE, capture_output=True, text=True, check=False)
    assert run.returncode == 0, run.stdout[-3000:] + run.stderr[-3000:]
    assert "3 passed" in run.stdout
