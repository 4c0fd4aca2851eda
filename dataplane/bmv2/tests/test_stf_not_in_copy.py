"""``stf.runner --not-in-copy``: which programs of a p4c checkout the copy holds no STF for."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from stf import runner  # noqa: E402


def test_only_programs_whose_stf_the_copy_lacks(tmp_path: Path) -> None:
    if not (runner.CORPUS / "arith-bmv2.stf").exists():
        pytest.fail(f"the STF corpus is not at {runner.CORPUS} (../shared/p4-stf)")
    for name in ("arith-bmv2", "new-prog-bmv2", "parser-inline/new-inline", "no-stf-bmv2"):
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / f"{name}.p4").write_text("")
        if name != "no-stf-bmv2":
            (tmp_path / f"{name}.stf").write_text("")
    assert runner.not_in_copy(tmp_path) == ["new-prog-bmv2", "parser-inline/new-inline"]
