"""compiled/ is what p4c makes of slicing.p4 now: the single source of truth for the
driver, the bundled target and simple_switch_grpc.

The recompilation needs p4c (``needs_p4c``: a failure in CI without it, a skip with the
reason elsewhere); the consistency of the checked-in files with each other does not.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

BMV2 = Path(__file__).resolve().parents[1]
COMPILED = BMV2 / "compiled"
FILES = ("slicing.json", "slicing.p4info.txtpb", "slicing.p4info.bin")


def _json_without_paths(path: Path) -> dict[str, object]:
    # "program" names the output directory p4c wrote to; everything else must be equal.
    data = json.loads(path.read_text())
    assert isinstance(data, dict)
    data.pop("program", None)
    return data


@pytest.mark.needs_p4c
def test_checked_in_artifacts_are_what_p4c_compiles_now(tmp_path: Path) -> None:
    out = tmp_path / "p4c"
    run = subprocess.run(
        ["make", "-s", "-C", str(BMV2), "compile", f"OUT={out}"], capture_output=True, text=True, check=False
    )
    assert run.returncode == 0, f"p4c failed (warnings are errors):\n{run.stdout}{run.stderr}"
    stale = [
        name
        for name in FILES
        if (
            _json_without_paths(out / name) != _json_without_paths(COMPILED / name)
            if name.endswith(".json")
            else (out / name).read_bytes() != (COMPILED / name).read_bytes()
        )
    ]
    assert not stale, f"dataplane/bmv2/compiled/{stale} are stale: run `make -C dataplane/bmv2 compile` and commit"


def test_text_and_binary_p4info_are_the_same_program() -> None:
    text = text_format.Parse((COMPILED / "slicing.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    binary = p4info_pb2.P4Info()
    binary.ParseFromString((COMPILED / "slicing.p4info.bin").read_bytes())
    assert text == binary
    assert binary.pkg_info.arch == "v1model"


def test_json_and_p4info_declare_the_same_tables_and_actions() -> None:
    info = p4info_pb2.P4Info()
    info.ParseFromString((COMPILED / "slicing.p4info.bin").read_bytes())
    bmv2 = json.loads((COMPILED / "slicing.json").read_text())
    json_tables = {t["name"] for p in bmv2["pipelines"] for t in p["tables"]}
    json_actions = {a["name"] for a in bmv2["actions"]}
    assert {t.preamble.name for t in info.tables} <= json_tables
    assert {a.preamble.name for a in info.actions} <= json_actions


def test_defaultonly_actions_are_scoped_in_the_p4info() -> None:
    """@defaultonly sits on the table's action list (p4c ignores it on the declaration)."""
    info = p4info_pb2.P4Info()
    info.ParseFromString((COMPILED / "slicing.p4info.bin").read_bytes())
    actions = {a.preamble.id: a.preamble.name for a in info.actions}
    scoped = {
        actions[r.id].rsplit(".", 1)[-1]
        for t in info.tables
        for r in t.action_refs
        if r.scope == p4info_pb2.ActionRef.DEFAULT_ONLY
    }
    assert {"miss_algorithm1", "miss_fixed", "drop_unallocated_port", "drop_unknown_vid", "drop"} <= scoped
