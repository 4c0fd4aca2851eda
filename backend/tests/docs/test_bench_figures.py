"""Figures in docs/ come from bench results files, never typed by hand: every marked block
renders exactly from bench/results/latest.json, and names a bench that has results."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

ROOT = Path(__file__).resolve().parents[3]


def _bench_docs() -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_docs", ROOT / "scripts" / "bench_docs.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_docs_tables_equal_the_latest_results() -> None:
    bench_docs = _bench_docs()
    results = json.loads(bench_docs.LATEST.read_text())
    stale, unknown = [], []
    for doc in sorted((ROOT / "docs").glob("*.md")):
        text = doc.read_text()
        for m in bench_docs.BLOCK.finditer(text):
            name = m.group("spec").split(":")[0]
            if name not in results["benches"]:
                unknown.append(f"{doc.name}: {name}")
        if bench_docs.update(text, results) != text:
            stale.append(doc.name)
    assert not unknown, f"doc blocks name benches without results (run `make bench`): {unknown}"
    assert not stale, f"bench tables differ from bench/results/latest.json: {stale} (run scripts/bench_docs.py)"


def test_every_figure_records_its_unit_and_a_judgeable_goal() -> None:
    results = json.loads((ROOT / "bench" / "results" / "latest.json").read_text())
    for name, bench in results["benches"].items():
        assert bench["machine"]["cores"] and bench["commit"], name
        for f in bench["figures"]:
            assert f["unit"], (name, f["name"])
            assert (f["goal"] == "") == (f["met"] is None), (name, f["name"], "a goal needs a verdict")
