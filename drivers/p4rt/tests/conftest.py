"""Fixtures: the bundled P4Runtime target as a real subprocess on a free port (the
``start_target`` factory is the repository's, in the root conftest)."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path

import pytest

BMV2 = Path(__file__).resolve().parents[3] / "dataplane" / "bmv2"
# --import-mode=importlib puts neither folder on sys.path; the helpers live there.
for extra in (BMV2, Path(__file__).resolve().parent):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bmv2_target.testing import Target  # noqa: E402


@pytest.fixture
def target(start_target: Callable[..., Target]) -> Target:
    return start_target("--priority-queues", "8")
