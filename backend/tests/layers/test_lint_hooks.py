"""The pre-commit hooks and `make test` run one list of checks (scripts/lint.sh)."""

from __future__ import annotations

import re
import subprocess
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
