"""Repository-wide pytest hooks: privileged tests fail loudly in CI instead of skipping."""

from __future__ import annotations

import os
import shutil
from collections.abc import Callable, Iterator

import pytest

from sliceportal_testbed.processes import RunningTarget, start_p4runtime_target

# The reference P4 toolchain (../shared/p4tools, installed by scripts/bootstrap.sh): tests
# that need it fail in CI when it is missing and skip with the reason elsewhere.
P4_TOOL_MARKERS = {"needs_p4c": "p4c", "needs_bmv2": "simple_switch_grpc"}


def pytest_configure(config: pytest.Config) -> None:
    for marker, tool in P4_TOOL_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: needs {tool} on PATH; fails under CI=true without it")


def pytest_runtest_setup(item: pytest.Item) -> None:
    # At setup, not collection: a fixture added to an item after collection never runs.
    missing = [t for m, t in P4_TOOL_MARKERS.items() if item.get_closest_marker(m) and not shutil.which(t)]
    if not missing:
        return
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"CI must run this test with the reference P4 toolchain; missing on PATH: {', '.join(missing)}")
    pytest.skip(f"needs {' and '.join(missing)} on PATH (../shared/p4tools/install.sh)")


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    if os.geteuid() == 0:
        return
    in_ci = os.environ.get("CI", "").lower() in ("1", "true", "yes")
    for item in items:
        if item.get_closest_marker("needs_root") is None:
            continue
        if in_ci:
            item.add_marker(pytest.mark.usefixtures("_fail_not_root"))
        else:
            item.add_marker(pytest.mark.skip(reason="needs root (network namespaces / XDP / BPF); run as root"))


@pytest.fixture
def _fail_not_root() -> None:
    pytest.fail("this test needs root and CI runs as root: the environment is wrong")


@pytest.fixture
def start_target() -> Iterator[Callable[..., RunningTarget]]:
    """Start bundled P4Runtime targets (``dataplane/bmv2``) as subprocesses; all stop afterwards."""
    started: list[RunningTarget] = []

    def start(*args: str) -> RunningTarget:
        t = start_p4runtime_target(*args)
        started.append(t)
        return t

    yield start
    for t in started:
        t.stop()
