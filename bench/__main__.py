"""Run the benchmarks of this folder (``make bench``) and keep their results as data.

Each bench runs in its own process with the same ``BENCH_RUN_ID``; their result files are
merged into ``bench/results/<run id>.json`` and ``bench/results/latest.json`` (machine, commit,
every figure and table), from which ``scripts/bench_docs.py`` regenerates the tables in docs/.

    python -m bench                  # everything (the full run)
    python -m bench --quick          # the short form of each bench (development, < 5 minutes)
    python -m bench xdp_cost api_load  # only these
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
ROOT = HERE.parent
sys.path.insert(0, str(HERE))

from _results import RESULTS  # noqa: E402


def benches() -> list[Path]:
    return [p for p in sorted(HERE.glob("*.py")) if not p.name.startswith("_") and not p.stem.endswith("_common")]


def machine() -> dict[str, Any]:
    cpu = next(
        (
            line.split(":", 1)[1].strip()
            for line in Path("/proc/cpuinfo").read_text().splitlines()
            if line.startswith("model name")
        ),
        platform.processor(),
    )
    mem_kib = int(
        next(line.split()[1] for line in Path("/proc/meminfo").read_text().splitlines() if line.startswith("MemTotal"))
    )
    return {
        "cores": os.cpu_count(),
        "cpu": cpu,
        "memory_gib": round(mem_kib / 2**20, 1),
        "kernel": platform.release(),
        "python": platform.python_version(),
    }


def commit() -> str:
    out = subprocess.run(
        ["git", "-C", str(ROOT), "describe", "--always", "--dirty"], capture_output=True, text=True, check=False
    )
    return out.stdout.strip() or "unknown"


def merge(run_id: str, started: float, failed: list[str], quick: bool) -> Path:
    run_dir = RESULTS / "runs" / run_id
    results = {p.stem: json.loads(p.read_text()) for p in sorted(run_dir.glob("*.json"))} if run_dir.exists() else {}
    doc = {
        "run_id": run_id,
        "commit": commit(),
        "date": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(started)),
        "quick": quick,
        "seconds": round(time.time() - started, 1),
        "machine": machine(),
        "failed": failed,
        "benches": results,
    }
    out = RESULTS / f"{run_id}.json"
    out.write_text(json.dumps(doc, indent=1) + "\n")
    # latest.json keeps the newest figure of every bench: a partial run updates only its own
    latest_path = RESULTS / "latest.json"
    latest = json.loads(latest_path.read_text()) if latest_path.exists() else {"benches": {}}
    for name, r in results.items():
        latest["benches"][name] = {
            **r,
            "run_id": run_id,
            "commit": doc["commit"],
            "date": doc["date"],
            "machine": doc["machine"],
        }
    latest_path.write_text(json.dumps(latest, indent=1, sort_keys=True) + "\n")
    return out


def main() -> int:
    ap = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    ap.add_argument("only", nargs="*", help="bench names (file stems) to run; default: all")
    ap.add_argument("--quick", action="store_true", help="the short form of each bench")
    args = ap.parse_args()
    selected = [b for b in benches() if not args.only or b.stem in args.only]
    unknown = set(args.only) - {b.stem for b in selected}
    if unknown:
        ap.error(f"no such bench: {', '.join(sorted(unknown))} (have: {', '.join(b.stem for b in benches())})")
    run_id = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime())
    env = {**os.environ, "BENCH_RUN_ID": run_id, "BENCH_QUICK": "1" if args.quick else ""}
    started, failed = time.time(), []
    for script in selected:
        print(f"\n=== {script.stem}", flush=True)
        if subprocess.run([sys.executable, str(script)], check=False, env=env).returncode:
            failed.append(script.stem)
    out = merge(run_id, started, failed, args.quick)
    print(f"\nresults of this run: {out.relative_to(ROOT)}; docs tables: scripts/bench_docs.py")
    if failed:
        print(f"failed: {', '.join(failed)}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
