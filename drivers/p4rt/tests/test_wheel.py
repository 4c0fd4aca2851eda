"""Installable without the source checkout (#31): the driver's wheel carries p4c's build of
slicing.p4, byte for byte what dataplane/bmv2/compiled holds, where ``compiled_dir`` looks
first; an install from the wheel alone pushes the same program."""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from sliceportal_p4rt.p4info import BMV2_JSON, P4INFO_BIN

DRIVER = Path(__file__).resolve().parents[1]
COMPILED = DRIVER.parents[1] / "dataplane" / "bmv2" / "compiled"


def test_the_wheel_ships_the_compiled_program(tmp_path: Path) -> None:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is missing: scripts/bootstrap.sh installs it")
    subprocess.run([uv, "build", "--wheel", "--quiet", "--out-dir", str(tmp_path), str(DRIVER)], check=True)
    (wheel,) = tmp_path.glob("*.whl")
    with zipfile.ZipFile(wheel) as z:
        for name in (P4INFO_BIN, BMV2_JSON):
            assert z.read(f"sliceportal_p4rt/compiled/{name}") == (COMPILED / name).read_bytes(), name
        z.extractall(tmp_path / "site")
    # the unpacked wheel alone, first on the path: it finds its own copy, not the checkout's
    probe = "import sliceportal_p4rt.p4info as m; print(m.compiled_dir())"
    out = subprocess.run(
        [sys.executable, "-c", probe],
        env={"PYTHONPATH": str(tmp_path / "site")},
        capture_output=True,
        text=True,
        check=True,
    ).stdout.strip()
    assert Path(out) == tmp_path / "site" / "sliceportal_p4rt" / "compiled"
