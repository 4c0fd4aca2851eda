"""The pre-commit hooks and `make test` run one list of checks (scripts/lint.sh)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import yaml

ROOT = Path(__file__).resolve().parents[3]


def _checks() -> set[str]:
    m = re.search(r"^ALL=\(([^)]*)\)", (ROOT / "scripts" / "lint.sh").read_text(), re.MULTILINE)
    assert m, "scripts/lint.sh lost its ALL=(...) list"
    return set(m.group(1).split())


def test_every_check_has_a_hook_and_every_hook_is_a_check() -> None:
    config = yaml.safe_load((ROOT / ".pre-commit-config.yaml").read_text())
    hooks = [h for repo in config["repos"] for h in repo["hooks"]]
    entries = {h["id"]: h["entry"].split() for h in hooks}
    assert all(e[0] == "scripts/lint.sh" and len(e) == 2 for e in entries.values()), entries
    assert {e[1] for e in entries.values()} == _checks()


def test_test_sh_runs_all_checks() -> None:
    assert re.search(r"^bash scripts/lint.sh\s*(#.*)?$", (ROOT / "scripts" / "test.sh").read_text(), re.MULTILINE)


def test_an_unknown_check_is_refused_by_name() -> None:
    r = subprocess.run(["bash", str(ROOT / "scripts" / "lint.sh"), "nope"], capture_output=True, text=True)
    assert r.returncode == 2
    assert "unknown check 'nope'" in r.stderr and "ruff" in r.stderr


def test_the_failure_summary_names_test_line_and_message(tmp_path: Path) -> None:
    """scripts/failures.py, which ends test.sh's log: a failing test by id, the line of its
    own file that failed (not a library's), and its message."""
    (tmp_path / "test_sample.py").write_text(
        "def _check(x):\n    assert x == 2, 'x is not two'\n\n\ndef test_fails():\n    _check(1)\n\n\n"
        "def test_passes():\n    _check(2)\n"
    )
    report = tmp_path / "report.xml"
    run = subprocess.run(
        [
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-p",
            "no:cacheprovider",
            "--rootdir",
            str(tmp_path),
            f"--junitxml={report}",
            "test_sample.py",
        ],
        cwd=tmp_path,
        capture_output=True,
        text=True,
    )
    assert run.returncode == 1, run.stdout
    summary = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "failures.py"), str(report), str(tmp_path / "absent.xml")],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert summary.splitlines()[:3] == [
        "== 1 failing tests (again, short)",
        "FAILURE test_sample::test_fails at line 2",
        "    AssertionError: x is not two",
    ], summary
