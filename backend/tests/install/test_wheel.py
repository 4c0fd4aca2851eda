"""Installable without the source checkout (#31): the portal's wheel alone keeps its state in
the user's data directory (or DATA_DIR), not beside site-packages, and serves the API without a
web UI unless FRONTEND_DIST names a built one."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

BACKEND = Path(__file__).resolve().parents[2]

PROBE = """
import json
from sliceportal.core.config import SOURCE_ROOT, Settings
s = Settings(_env_file=None)
print(json.dumps({"source_root": SOURCE_ROOT and str(SOURCE_ROOT), "data_dir": str(s.data_dir),
                  "run_dir": str(s.run_dir), "frontend_dist": s.frontend_dist and str(s.frontend_dist)}))
"""


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    uv = shutil.which("uv")
    if uv is None:
        pytest.fail("uv is missing: scripts/bootstrap.sh installs it")
    out = tmp_path_factory.mktemp("wheel")
    subprocess.run([uv, "build", "--wheel", "--quiet", "--out-dir", str(out), str(BACKEND)], check=True)
    (wheel,) = out.glob("sliceportal-*.whl")
    with zipfile.ZipFile(wheel) as z:
        z.extractall(out / "site")
    return out / "site"


def _settings_of(site: Path, home: Path, **env: str) -> dict[str, str | None]:
    # the unpacked wheel first on the path: it, not the checkout's editable install, is imported
    out = subprocess.run(
        [sys.executable, "-c", PROBE],
        env={"PYTHONPATH": str(site), "HOME": str(home), **env},
        capture_output=True,
        text=True,
        check=True,
        cwd=home,
    ).stdout
    found: dict[str, str | None] = json.loads(out)
    return found


def test_an_installed_portal_keeps_state_in_the_users_data_dir(site: Path, tmp_path: Path) -> None:
    got = _settings_of(site, tmp_path)
    assert got == {
        "source_root": None,
        "data_dir": str(tmp_path / ".local" / "share" / "sliceportal"),
        "run_dir": str(tmp_path / ".local" / "share" / "sliceportal" / "run"),
        "frontend_dist": None,
    }
    got = _settings_of(site, tmp_path, XDG_DATA_HOME=str(tmp_path / "xdg"), FRONTEND_DIST=str(tmp_path / "ui"))
    assert got["data_dir"] == str(tmp_path / "xdg" / "sliceportal")
    assert got["frontend_dist"] == str(tmp_path / "ui")


def test_the_checkout_keeps_its_var_dir() -> None:
    from sliceportal.core.config import SOURCE_ROOT, Settings

    assert BACKEND.parent == SOURCE_ROOT
    s = Settings(_env_file=None)  # type: ignore[call-arg]
    assert s.frontend_dist == BACKEND.parent / "frontend" / "dist"
