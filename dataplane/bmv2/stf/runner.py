"""Run p4c's STF corpus on the bundled target's engine and classify each program.

Each ``.p4`` with an ``.stf`` is compiled by the reference p4c exactly as p4c's own BMv2
test runner does; the JSON + P4Info are loaded as ``SetForwardingPipelineConfig`` does
(``Switch.load``), the STF's entries written as P4Runtime table entries
(``TableStore.write``) and its packets run as ``RunPcaps`` runs them (``Switch.run``).
Outcomes: ``pass``; ``refused`` (the target refused the program at load, or the STF
needs a command the target has no API for); ``wrong`` (outputs differ); ``crash`` (any
other exception, the engine process dying, or a per-program timeout); ``uncompiled``
(p4c itself fails; not the target's business).

The engine runs in a worker subprocess so that a hang or an abort costs one program, not
the run: ``python -m stf.runner --worker`` (from dataplane/bmv2) reads one JSON job per
line and answers one JSON line.
"""

from __future__ import annotations

import argparse
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent  # dataplane/bmv2/stf
BMV2 = HERE.parent
CORPUS = BMV2.parent.parent.parent / "shared" / "p4-stf" / "p4_16_samples"
BASELINE = HERE / "baseline.json"


@dataclass
class Result:
    name: str
    outcome: str  # pass | refused | wrong | crash | uncompiled
    message: str = ""
    construct: str = ""  # for refusals: what was refused


def programs(corpus: Path = CORPUS) -> list[Path]:
    """Every v1model program of the corpus that comes with an STF file."""
    return sorted(p for p in corpus.rglob("*.p4") if p.with_suffix(".stf").exists())


def name_of(p4: Path, corpus: Path = CORPUS) -> str:
    return str(p4.relative_to(corpus).with_suffix(""))


def compile_one(p4: Path, out: Path, timeout_s: float = 120) -> str | None:
    """p4c as p4c's run-bmv2-test.py calls it; None on success, else p4c's complaint."""
    out.mkdir(parents=True, exist_ok=True)
    info = out / (p4.stem + ".p4info.txtpb")
    cmd = ["p4c", "--target", "bmv2", "--arch", "v1model", "--p4runtime-files", str(info), "-o", str(out), str(p4)]
    try:
        run = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout_s, check=False)
    except subprocess.TimeoutExpired:
        return f"p4c timed out after {timeout_s:.0f} s"
    if run.returncode != 0 or not (out / (p4.stem + ".json")).exists():
        lines = (run.stderr + run.stdout).strip().splitlines()
        errors = [x for x in lines if "error" in x.lower()]
        return (errors or lines or ["p4c failed"])[0][:300]
    return None


# ---- the worker: one program on the engine ----------------------------------------------


def construct_of(message: str) -> str:
    """A short name for the first construct a refusal names, for the summary by construct."""
    first = message.split("does not execute: ", 1)[-1].split("; ")[0]
    for pattern, name in (
        (r"primitive: (\w+)$", None),
        (r"parser state \S+ op: (\w+)", "parser op {}"),
        (r"expression operator: (\w+)", None),
        (r"program: (header \w+)", None),
        (r"is signed", "signed int<N>"),
        (r"is \d+ bits wide", "fields wider than 64 bits"),
        (r"table \S+: (const entries|masked key fields)", None),
        (r"P4Info", "P4Info and JSON disagree"),
        (r"not a BMv2 JSON program", "JSON not read"),
        (r"STF command (\w+)", "STF command {}"),
    ):
        m = re.search(pattern, first)
        if m:
            found = m.group(1) if m.groups() else ""
            return name.format(found) if name else found
    return first[:60]


def _int(text: str) -> int:
    return int(text, 0)


def run_program(json_text: str, p4info_text: str, stf_text: str) -> tuple[str, str]:
    """(outcome, message) of one compiled program on a fresh switch."""
    from bmv2_target.errors import P4RTError
    from bmv2_target.p4info_index import P4InfoIndex
    from bmv2_target.switch import Switch, SwitchConfig
    from google.protobuf import text_format
    from p4.config.v1 import p4info_pb2
    from p4.v1 import p4runtime_pb2

    from stf.stf import Add, matches, parse

    stf = parse(stf_text)
    info = text_format.Parse(p4info_text, p4info_pb2.P4Info())
    switch = Switch(SwitchConfig())
    try:
        switch.load(P4InfoIndex.of(info), json_text.encode())
    except P4RTError as err0:
        return "refused", err0.message
    if stf.unsupported:
        return "refused", f"STF command {stf.unsupported[0]} (the target has no API for it)"
    assert switch.tables is not None and switch.index is not None
    program = json.loads(json_text)
    json_keys = {
        t["name"]: [k.get("name", "") for k in t.get("key", [])]
        for p in program.get("pipelines", [])
        for t in p.get("tables", [])
    }

    def by_name(names: list[str], wanted: str, what: str) -> int:
        for suffix in (False, True):  # the exact name first, else the one ending in it
            hits = [i for i, n in enumerate(names) if (n.endswith("." + wanted) if suffix else n == wanted)]
            if len(hits) == 1:
                return hits[0]
        raise LookupError(f"STF names {what} {wanted!r}: not one of {names}")

    tables = list(switch.index.tables.values())
    MF = p4info_pb2.MatchField
    bmv2_priorities = 0
    for e in stf.entries:
        t = tables[by_name([t.preamble.name for t in tables], e.table, "table")]
        te = p4runtime_pb2.TableEntry(table_id=t.preamble.id)
        actions = [switch.index.actions[r.id] for r in t.action_refs]
        a = actions[by_name([a.preamble.name for a in actions], e.action, f"action of {t.preamble.name}")]
        te.action.action.action_id = a.preamble.id
        for pname, value in e.params:
            spec = a.params[by_name([p.name for p in a.params], pname, f"parameter of {a.preamble.name}")]
            v = _int(value)
            te.action.action.params.add(param_id=spec.id, value=v.to_bytes((spec.bitwidth + 7) // 8, "big"))
        if not isinstance(e, Add):
            te.is_default_action = True
            switch.tables.write(p4runtime_pb2.Update.MODIFY, te)
            continue
        jnames = json_keys.get(t.preamble.name, [])
        for kname, value in e.keys:
            kname = re.sub(r"\$(\d+)", r"[\1]", kname)  # bmv2stf writes stack element i as $i
            try:
                i = by_name([f.name for f in t.match_fields], kname, f"key of {t.preamble.name}")
            except LookupError:
                i = by_name(jnames, kname, f"key of {t.preamble.name}")
            f = t.match_fields[i]
            nbytes = (f.bitwidth + 7) // 8
            full = (1 << f.bitwidth) - 1
            m = te.match.add(field_id=f.id)
            if "&&&" in value:
                v, mask = (_int(x) for x in value.split("&&&"))
            elif "*" in value:
                digits = value[2:] if value.lower().startswith("0x") else value
                v = int(digits.replace("*", "0"), 16)
                mask = int("".join("0" if c == "*" else "F" for c in digits), 16)
            elif "/" in value:
                v, plen = (_int(x) for x in value.split("/"))
                mask = full ^ ((1 << (f.bitwidth - plen)) - 1)
            else:
                v, mask = _int(value), full
            if f.match_type == MF.EXACT:
                m.exact.value = v.to_bytes(nbytes, "big")
            elif f.match_type == MF.LPM:
                m.lpm.value, m.lpm.prefix_len = (v & mask).to_bytes(nbytes, "big"), bin(mask).count("1")
            elif f.match_type == MF.OPTIONAL:
                if mask == 0:
                    del te.match[-1]  # don't care: P4Runtime omits the field
                    continue
                m.optional.value = v.to_bytes(nbytes, "big")
            elif f.match_type == MF.TERNARY:
                if mask == 0:
                    del te.match[-1]  # don't care: P4Runtime omits the field
                    continue
                m.ternary.value, m.ternary.mask = (v & mask).to_bytes(nbytes, "big"), mask.to_bytes(nbytes, "big")
            else:
                m.range.low, m.range.high = v.to_bytes(nbytes, "big"), v.to_bytes(nbytes, "big")
        if any(f.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for f in t.match_fields):
            # An STF priority: a larger number wins, as in P4Runtime (bmv2stf hands
            # simple_switch's CLI 10000 - priority, where a larger number loses; P4Runtime
            # needs > 0, hence + 1). Without one, bmv2stf's entries rank in the order
            # they were added.
            bmv2_priorities += 1
            te.priority = e.priority + 1 if e.priority is not None else (1 << 24) - bmv2_priorities
        try:
            switch.tables.write(p4runtime_pb2.Update.INSERT, te)
        except P4RTError as err:
            return "wrong", f"entry for {t.preamble.name} refused: {err.message}"
    switch.tables.commit()
    outputs = switch.run([(i * 1000, port, data) for i, (port, data) in enumerate(stf.packets)])
    got: dict[int, list[bytes]] = {}
    for o in outputs:
        got.setdefault(o.port, []).append(o.data)
    want: dict[int, list[Any]] = {}
    for x in stf.expects:
        want.setdefault(x.port, []).append(x)
    for port in sorted(set(got) | set(want)):
        g, w = got.get(port, []), want.get(port, [])
        if len(g) != len(w):
            return "wrong", f"port {port}: expected {len(w)} packets, got {len(g)}"
        for n, (x, data) in enumerate(zip(w, g, strict=True)):
            if not matches(x, data):
                want_text = x.pattern + ("$" if x.exact_length else "")
                return "wrong", f"port {port} packet {n}: expected {want_text}, got {data.hex().upper()}"
    return "pass", ""


def worker() -> None:
    for line in sys.stdin:
        job = json.loads(line)
        try:
            outcome, message = run_program(
                Path(job["json"]).read_text(), Path(job["p4info"]).read_text(), Path(job["stf"]).read_text()
            )
        except (KeyboardInterrupt, SystemExit):
            raise
        except BaseException as e:  # a Rust panic arrives as a BaseException
            outcome, message = "crash", f"{type(e).__name__}: {e}"
        print(json.dumps({"outcome": outcome, "message": message}), flush=True)


class Worker:
    """The engine's subprocess; restarted after a hang or a death."""

    def __init__(self) -> None:
        env = dict(os.environ, PYTHONPATH=str(BMV2) + os.pathsep + os.environ.get("PYTHONPATH", ""))
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "stf.runner", "--worker"],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=env, cwd=BMV2,
        )  # fmt: skip
        self.lines: queue.Queue[str] = queue.Queue()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            self.lines.put(line)
        self.lines.put("")  # EOF: the process died

    def ask(self, job: dict[str, str], timeout_s: float) -> dict[str, str] | None:
        assert self.proc.stdin is not None
        try:
            self.proc.stdin.write(json.dumps(job) + "\n")
            self.proc.stdin.flush()
            line = self.lines.get(timeout=timeout_s)
        except (BrokenPipeError, queue.Empty):
            return None
        return json.loads(line) if line else None

    def stop(self) -> None:
        if self.proc.stdin is not None:
            self.proc.stdin.close()
        try:
            self.proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def run_corpus(
    corpus: Path = CORPUS, jobs: int = 2, timeout_s: float = 20, only: list[str] | None = None
) -> list[Result]:
    """Compile (``jobs`` p4c at a time) and run every program; results in name order."""
    progs = [p for p in programs(corpus) if only is None or name_of(p, corpus) in only]
    results: list[Result] = []
    with tempfile.TemporaryDirectory(prefix="stf-") as tmp, ThreadPoolExecutor(jobs) as pool:
        outs = {p: Path(tmp) / name_of(p, corpus).replace("/", "__") for p in progs}
        compiled = [(p, pool.submit(compile_one, p, outs[p])) for p in progs]
        w = Worker()
        try:
            for p, fut in compiled:
                name, err = name_of(p, corpus), fut.result()
                if err is not None:
                    results.append(Result(name, "uncompiled", err))
                    continue
                out = outs[p]
                job = {
                    "json": str(out / (p.stem + ".json")),
                    "p4info": str(out / (p.stem + ".p4info.txtpb")),
                    "stf": str(p.with_suffix(".stf")),
                }
                answer = w.ask(job, timeout_s)
                if answer is None:
                    dead = w.proc.poll()
                    w.proc.kill()
                    w.stop()
                    w = Worker()
                    why = f"engine process died ({dead})" if dead is not None else f"no answer in {timeout_s:.0f} s"
                    results.append(Result(name, "crash", why))
                    continue
                r = Result(name, answer["outcome"], answer["message"])
                if r.outcome == "refused":
                    r.construct = construct_of(r.message)
                results.append(r)
        finally:
            w.stop()
    return results


def summary(results: list[Result]) -> dict[str, Any]:
    counts = Counter(r.outcome for r in results)
    by_construct = Counter(r.construct for r in results if r.outcome == "refused")
    return {
        "programs": len(results),
        **{k: counts.get(k, 0) for k in ("pass", "refused", "wrong", "crash", "uncompiled")},
        "refused_by_construct": dict(by_construct.most_common()),
    }


def report(results: list[Result], path: Path, seconds: float) -> dict[str, Any]:
    doc = {"summary": summary(results), "seconds": round(seconds, 1), "results": [asdict(r) for r in results]}
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(doc, indent=1) + "\n")
    return doc


def not_in_copy(samples: Path) -> list[str]:
    """The programs of a p4c checkout's ``testdata/p4_16_samples`` whose STF file the copy has
    not (#30: the share that passes must hold on them too); those not written for v1model end
    as ``uncompiled``, as p4c refuses them for BMv2."""
    names = [name_of(p, samples) for p in programs(samples)]
    return [n for n in names if not (CORPUS / f"{n}.stf").exists()]


def main() -> None:
    if sys.argv[1:] == ["--worker"]:
        worker()
        return
    args = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    args.add_argument("names", nargs="*", help="programs to run (default: all)")
    args.add_argument(
        "--not-in-copy",
        type=Path,
        metavar="P4_16_SAMPLES",
        help="run the programs of this p4c checkout's testdata/p4_16_samples whose STF the copy lacks",
    )
    opts = args.parse_args()
    corpus, only = CORPUS, opts.names or None
    if opts.not_in_copy is not None:
        corpus, only = opts.not_in_copy, [n for n in not_in_copy(opts.not_in_copy) if only is None or n in only]
    t0 = time.monotonic()
    results = run_corpus(corpus, only=only)
    out = "stf-corpus.json" if opts.not_in_copy is None else "stf-not-in-copy.json"
    doc = report(results, BMV2.parent.parent / "var" / out, time.monotonic() - t0)
    for r in results:
        if r.outcome != "pass":
            print(f"{r.outcome:10} {r.name}: {r.message[:160]}")
    print(json.dumps(doc["summary"], indent=1))


if __name__ == "__main__":
    main()
