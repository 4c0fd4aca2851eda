"""pytest side of the cocotb testbenches: build with Icarus, run one cocotb module.

Every ``test_<module>.py`` holds the cocotb coroutines (names not starting with ``test``
so pytest does not collect them) and one pytest function that calls ``cocotb_run``.
Build directories go under ``dataplane/netfpga/build/`` (gitignored), one per parameter set.
What the testbenches share (clock, reset, register ports, tuser layout) is ``netfpga_tb.py``
in this folder.
"""

from __future__ import annotations

import sys
from collections.abc import Callable, Mapping
from pathlib import Path

import pytest

NETFPGA = Path(__file__).resolve().parents[1]
RTL = NETFPGA / "rtl"
BUILD = NETFPGA / "build" / "cocotb"
REPO = NETFPGA.parents[1]

# --import-mode=importlib puts no test folder on sys.path: the testbenches import
# netfpga_tb from here, in pytest and (through the PYTHONPATH the runner derives from
# sys.path) in the simulator.
TB = str(Path(__file__).resolve().parent)
if TB not in sys.path:
    sys.path.insert(0, TB)

RunCocotb = Callable[..., None]


@pytest.fixture
def cocotb_run() -> RunCocotb:
    from cocotb_tools.check_results import get_results
    from cocotb_tools.runner import get_runner

    def run(toplevel: str, test_file: str, parameters: Mapping[str, object] | None = None, tag: str = "") -> None:
        params = dict(parameters or {})
        name = toplevel + ("_" + tag if tag else "") + "".join(f"_{k}{v}" for k, v in sorted(params.items()))
        build_dir = BUILD / name
        test_path = Path(test_file).resolve()
        runner = get_runner("icarus")
        runner.build(
            sources=sorted(RTL.glob("*.v")),
            includes=[RTL],
            hdl_toplevel=toplevel,
            parameters=params,
            build_dir=build_dir,
            timescale=("1ns", "1ps"),
        )
        # The runner hands the simulator this process's sys.path as PYTHONPATH.
        sys.path.insert(0, str(test_path.parent))
        try:
            results = runner.test(
                test_module=test_path.stem,
                hdl_toplevel=toplevel,
                build_dir=build_dir,
                test_dir=build_dir,
                parameters=params,
                extra_env={"SP_PARAMS": repr(params)},
            )
        finally:
            sys.path.remove(str(test_path.parent))
        tests, failures = get_results(results)
        assert tests > 0, f"no cocotb test ran in {test_path.name}"
        assert failures == 0, f"{failures} of {tests} cocotb tests failed in {test_path.name} ({name})"

    return run
