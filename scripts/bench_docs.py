"""Regenerate the benchmark tables in docs/ from bench/results/latest.json.

A doc marks where a bench's results go:

    <!-- bench:xdp_cost -->            every figure of that bench, then each of its tables
    <!-- bench:xdp_cost:figures -->    only the figures
    <!-- bench:xdp_cost:table:0 -->    only its first table
    ... (generated text, replaced on every run) ...
    <!-- /bench -->

    python scripts/bench_docs.py           # rewrite the marked blocks
    python scripts/bench_docs.py --check   # exit 1 when a block differs from the results (CI)

Figures in docs are therefore never typed by hand: they come from the newest run of the
bench, whose machine, commit and date are printed under each block.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
LATEST = ROOT / "bench" / "results" / "latest.json"
DOCS = ROOT / "docs"
NONE = "\u2013"  # an en dash: no value
BLOCK = re.compile(r"(<!-- bench:(?P<spec>[\w:]+) -->\n)(?P<body>.*?)(<!-- /bench -->)", re.S)


def _cell(v: Any) -> str:
    if v is None:
        return NONE
    if isinstance(v, float) and v.is_integer() and abs(v) < 1e15:
        v = int(v)
    if isinstance(v, float):
        return f"{v:,.2f}" if abs(v) < 100 else f"{v:,.0f}"
    if isinstance(v, int) and not isinstance(v, bool):
        return f"{v:,}"
    return str(v).replace("|", "\\|")


def _table(columns: list[str], rows: list[list[Any]]) -> list[str]:
    out = ["| " + " | ".join(columns) + " |", "|" + "---|" * len(columns)]
    out += ["| " + " | ".join(_cell(c) for c in row) + " |" for row in rows]
    return out


def _figures(figures: list[dict[str, Any]]) -> list[str]:
    rows = []
    for f in figures:
        ratio = f"{f['ratio']:.2f} x {f['baseline_name']}" if f.get("ratio") is not None else NONE
        met = {True: "yes", False: "**no**", None: NONE}[f.get("met")]
        rows.append([f["name"], f"{_cell(f['value'])} {f['unit']}", ratio, f.get("goal") or NONE, met])
    return _table(["figure", "value", "against the baseline of the same run", "goal", "met"], rows)


def render(spec: str, results: dict[str, Any]) -> str:
    name, _, part = spec.partition(":")
    bench = results["benches"].get(name)
    if bench is None:
        return f"*No results of `{name}` yet: run `make bench`.*\n"
    lines: list[str] = []
    if part in ("", "figures") and bench["figures"]:
        lines += [*_figures(bench["figures"]), ""]
    tables = bench["tables"]
    if part.startswith("table:"):
        tables = [tables[int(part.split(":")[1])]]
    elif part == "figures":
        tables = []
    for t in tables:
        lines += [f"**{t['name']}**", "", *_table(t["columns"], t["rows"])]
        lines += ["", f"*{t['note']}*", ""] if t.get("note") else [""]
    m = bench["machine"]
    form = "quick form" if bench.get("quick") else "full run"
    lines.append(
        f"<sub>`{name}`, {form}, run {bench['run_id']} at commit {bench['commit']} on {m['cores']} cores "
        f"({m['cpu']}), kernel {m['kernel']}; regenerate with `make bench` + "
        f"`scripts/bench_docs.py`.</sub>"
    )
    return "\n".join(lines) + "\n"


def update(text: str, results: dict[str, Any]) -> str:
    return BLOCK.sub(lambda m: m.group(1) + render(m.group("spec"), results) + m.group(4), text)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--check", action="store_true", help="fail when a doc's block differs from the results")
    args = ap.parse_args()
    results = json.loads(LATEST.read_text()) if LATEST.exists() else {"benches": {}}
    stale = []
    for doc in sorted(DOCS.glob("*.md")):
        text = doc.read_text()
        new = update(text, results)
        if new != text:
            stale.append(doc.relative_to(ROOT))
            if not args.check:
                doc.write_text(new)
    if args.check and stale:
        print(f"bench tables out of date in: {', '.join(map(str, stale))} (run scripts/bench_docs.py)")
        return 1
    for doc in stale:
        print(f"updated {doc}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
