"""Benchmark results as data: every bench records its figures here instead of only printing.

A bench opens ``Results("name")``, adds figures (a value, its unit, the baseline measured in
the same run and the goal it is judged against) and tables (rows as printed), and
``write()``s them. ``python -m bench`` gives every bench of one run the same run id
(``BENCH_RUN_ID``) and merges their files into ``bench/results/<run id>.json`` and
``bench/results/latest.json`` with the machine and the commit; ``scripts/bench_docs.py``
renders the tables in docs/ from ``latest.json``. ``BENCH_QUICK=1`` asks each bench for its
short form (development); the figures say which form produced them.
"""

from __future__ import annotations

import json
import os
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
RESULTS = HERE / "results"


def quick() -> bool:
    """True in ``make bench-quick`` / ``python -m bench --quick``: smaller sizes, fewer repeats."""
    return os.environ.get("BENCH_QUICK", "") not in ("", "0")


def run_dir() -> Path:
    """Where this run's per-bench files go (one directory per run id)."""
    run_id = os.environ.get("BENCH_RUN_ID") or time.strftime("%Y%m%dT%H%M%S")
    os.environ.setdefault("BENCH_RUN_ID", run_id)
    return RESULTS / "runs" / run_id


@dataclass
class Figure:
    name: str
    value: float
    unit: str
    baseline: float | None = None  # measured in the same run, same unit
    baseline_name: str = ""
    goal: str = ""  # e.g. "<= 2.0 x baseline"; judged by ``met``
    met: bool | None = None
    note: str = ""

    @property
    def ratio(self) -> float | None:
        return self.value / self.baseline if self.baseline else None


@dataclass
class Table:
    name: str
    columns: list[str]
    rows: list[list[Any]] = field(default_factory=list)
    note: str = ""


class Results:
    def __init__(self, bench: str) -> None:
        self.bench = bench
        self.figures: list[Figure] = []
        self.tables: list[Table] = []
        self.plots: list[str] = []
        self.started = time.time()

    def figure(
        self,
        name: str,
        value: float,
        unit: str,
        *,
        baseline: float | None = None,
        baseline_name: str = "",
        goal: str = "",
        met: bool | None = None,
        note: str = "",
    ) -> Figure:
        f = Figure(
            name, float(value), unit, None if baseline is None else float(baseline), baseline_name, goal, met, note
        )
        self.figures.append(f)
        return f

    def table(self, name: str, columns: list[str], note: str = "") -> Table:
        t = Table(name, columns, note=note)
        self.tables.append(t)
        return t

    def print_tables(self) -> None:
        """Each table as text: its name, then its columns and its rows, cells between " | "."""
        for t in self.tables:
            print(t.name)
            print("  " + " | ".join(t.columns))
            for row in t.rows:
                print("  " + " | ".join(str(c) for c in row))

    def plot(self, path: Path) -> None:
        self.plots.append(str(path.relative_to(HERE)) if path.is_relative_to(HERE) else str(path))

    def as_json(self) -> dict[str, Any]:
        return {
            "bench": self.bench,
            "quick": quick(),
            "seconds": round(time.time() - self.started, 2),
            "figures": [{**asdict(f), "ratio": f.ratio} for f in self.figures],
            "tables": [asdict(t) for t in self.tables],
            "plots": self.plots,
        }

    def write(self) -> Path:
        out = run_dir() / f"{self.bench}.json"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(self.as_json(), indent=1, default=float) + "\n")
        print(f"results: {out.relative_to(HERE.parent)}", flush=True)
        return out


def plots_dir() -> Path:
    out = RESULTS / "plots"
    out.mkdir(parents=True, exist_ok=True)
    return out
