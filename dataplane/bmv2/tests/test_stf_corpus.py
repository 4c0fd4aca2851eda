"""p4c's own v1model test programs with STF packet tests (../shared/p4-stf) on the bundled
target's engine: compiled by the reference p4c, loaded as SetForwardingPipelineConfig
loads them, entries written and packets run as the target does. The STF files carry the
answers simple_switch gives (every program of the copy passes there), so no reference
switch runs here.

Fails on any wrong answer or crash / hang, and on any program of the checked-in baseline
(stf/baseline.json) that no longer passes. The report (per program outcome and message)
goes to var/stf-corpus.json; the summary is printed.
"""

from __future__ import annotations

import json
import sys
import time
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from stf import runner  # noqa: E402

REPORT = HERE.parent.parent / "var" / "stf-corpus.json"


@pytest.mark.slow
@pytest.mark.needs_p4c
def test_p4c_stf_corpus_has_no_wrong_answer_and_no_regression() -> None:
    if not runner.CORPUS.is_dir():
        pytest.fail(f"the STF corpus is missing: {runner.CORPUS}")
    t0 = time.monotonic()
    results = runner.run_corpus()
    doc = runner.report(results, REPORT, time.monotonic() - t0)
    print(json.dumps(doc["summary"], indent=1))
    baseline = json.loads(runner.BASELINE.read_text())
    known_wrong = set(baseline.get("known_wrong", {}))
    bad = [r for r in results if r.outcome in ("wrong", "crash") and r.name not in known_wrong]
    assert not bad, "\n".join(f"{r.outcome} {r.name}: {r.message}" for r in bad)
    passing = {r.name for r in results if r.outcome == "pass"}
    regressed = sorted(set(baseline["pass"]) - passing)
    outcome = {r.name: f"{r.outcome}: {r.message}" for r in results}
    assert not regressed, "\n".join(f"{n} no longer passes: {outcome.get(n, 'missing')}" for n in regressed)
    assert len(results) == 154, f"the corpus has 154 STF files, ran {len(results)}"


# A program of p4c's corpus that has no STF file in the copy: simple_switch answers a
# variable-length extract of a length that is not whole bytes with ParserInvalidArgument
# (6), a length beyond the header's maximum with HeaderTooShort (4); the program writes
# the error into the low byte of the destination MAC.
VARBIT_STF = """
packet 0 000000000000 000000000000 000C 0102030405
expect 1 000000000006
packet 0 000000000000 000000000000 0018 0102030405
expect 1 000000000004
packet 0 000000000000 000000000000 0010 0102030405
expect 1 000000000000
"""


@pytest.mark.needs_p4c
def test_varbit_length_not_whole_bytes_is_parser_invalid_argument(tmp_path: Path) -> None:
    p4 = runner.CORPUS / "test-parserinvalidargument-error-bmv2.p4"
    assert runner.compile_one(p4, tmp_path) is None
    (tmp_path / "case.stf").write_text(VARBIT_STF)
    w = runner.Worker()
    try:
        job = {
            "json": str(tmp_path / (p4.stem + ".json")),
            "p4info": str(tmp_path / (p4.stem + ".p4info.txtpb")),
            "stf": str(tmp_path / "case.stf"),
        }
        answer = w.ask(job, timeout_s=60)
    finally:
        w.stop()
    assert answer == {"outcome": "pass", "message": ""}
