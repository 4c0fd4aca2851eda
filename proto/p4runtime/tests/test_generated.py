"""The committed bindings are exactly what generate.py writes from spec/ (one source of truth)."""

from __future__ import annotations

import filecmp
import importlib.util
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent


def _generate(out: Path) -> None:
    spec = importlib.util.spec_from_file_location("p4runtime_generate", HERE / "generate.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    module.generate(out)


def _files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and "__pycache__" not in p.parts}


def test_committed_bindings_are_the_generated_ones(tmp_path: Path) -> None:
    _generate(tmp_path)
    committed = HERE / "src"
    assert _files(tmp_path) == _files(committed)
    differ = [f for f in sorted(_files(tmp_path)) if not filecmp.cmp(tmp_path / f, committed / f, shallow=False)]
    assert not differ, f"run `python proto/p4runtime/generate.py`: {differ} differ from spec/"


def test_the_fast_parser_is_in_use() -> None:
    # the reason for these bindings: protobuf's upb backend, not the pure-Python one
    from google.protobuf.internal import api_implementation

    assert api_implementation.Type() == "upb"
