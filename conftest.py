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


# `make test` runs the suite as two pytest processes side by side (scripts/test.sh): the
# "cpu" lane holds tests that only compute - RTL under the simulator, the compiler's proofs,
# the P4 engine against recorded answers - with no clocks, sockets or kernel objects; the
# "live" lane holds the rest, its in-process API tests first, so that the cpu lane runs beside
# those rather than beside the tests that measure time. No --lane: the whole suite, in order.
CPU_LANE = (
    "dataplane/netfpga/tb/",
    "backend/tests/rules/",
    "dataplane/bmv2/tests/",
    "dataplane/conformance/test_equivalence.py",
    # the Verilator model in simulated time: what it measures does not depend on the host's
    "drivers/netfpga/tests/test_table5_e2e.py",
    "drivers/netfpga/tests/test_rate_conformance.py",
)
CPU_LANE_EXCEPT = (  # veth links and a clock
    "dataplane/bmv2/tests/test_live_native.py",
    "dataplane/bmv2/tests/differential/",
)
LIVE_FIRST = (
    "backend/tests/api/",
    "backend/tests/security/",
    "backend/tests/deployments/",
    "backend/tests/services/",
    "backend/tests/drivers/",
    "backend/tests/docs/",
    "backend/tests/layers/",
)


def in_cpu_lane(nodeid: str) -> bool:
    return nodeid.startswith(CPU_LANE) and not nodeid.startswith(CPU_LANE_EXCEPT)


def pytest_addoption(parser: pytest.Parser) -> None:
    parser.addoption(
        "--lane",
        choices=("cpu", "live"),
        default=None,
        help="run one lane of the suite (conftest.py CPU_LANE); scripts/test.sh runs both side by side",
    )


def _select_lane(config: pytest.Config, items: list[pytest.Item]) -> None:
    lane = config.getoption("--lane")
    if lane is None:
        return
    keep, drop = [], []
    for item in items:
        (keep if in_cpu_lane(item.nodeid) == (lane == "cpu") else drop).append(item)
    config.hook.pytest_deselected(items=drop)
    if lane == "live":  # stable: the order within each part stays the collection's
        keep.sort(key=lambda i: not i.nodeid.startswith(LIVE_FIRST))
    items[:] = keep


def in_ci() -> bool:
    return os.environ.get("CI", "").lower() in ("1", "true", "yes")


def pytest_configure(config: pytest.Config) -> None:
    for marker, tool in P4_TOOL_MARKERS.items():
        config.addinivalue_line("markers", f"{marker}: needs {tool} on PATH; fails under CI=true without it")
    config.addinivalue_line(
        "markers", "needs_p4runtime_shell: needs p4runtime-shell's virtualenv (bootstrap.sh); fails under CI=true"
    )


def _p4runtime_shell_missing() -> str | None:
    """Why p4runtime-shell's isolated virtualenv cannot be used here, or None."""
    from sliceportal_p4rt.shell import ShellUnavailable, shell_python

    try:
        shell_python()
    except ShellUnavailable as e:
        return f"{e.message} ({e.hint})"
    return None


def pytest_runtest_setup(item: pytest.Item) -> None:
    # At setup, not collection: a fixture added to an item after collection never runs.
    missing = [t for m, t in P4_TOOL_MARKERS.items() if item.get_closest_marker(m) and not shutil.which(t)]
    if missing:
        if in_ci():
            pytest.fail(f"CI must run this test with the reference P4 toolchain; missing on PATH: {', '.join(missing)}")
        pytest.skip(f"needs {' and '.join(missing)} on PATH (../shared/p4tools/install.sh)")
    if item.get_closest_marker("needs_p4runtime_shell") and (why := _p4runtime_shell_missing()):
        if in_ci():
            pytest.fail(f"CI must run this test with p4runtime-shell: {why}")
        pytest.skip(why)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    _select_lane(config, items)
    if os.geteuid() == 0:
        return
    ci = in_ci()
    for item in items:
        if item.get_closest_marker("needs_root") is None:
            continue
        if ci:
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
