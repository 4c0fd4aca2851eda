"""Repository-wide pytest hooks: privileged tests fail loudly in CI instead of skipping."""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator

import pytest

from sliceportal.testbed.processes import RunningTarget, start_p4runtime_target


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
