"""Fields wider than 64 bits and signed int<N> arithmetic (issue #30) on the bundled
target's engine against simple_switch's answers: tests/p4/wide_signed.p4 runs 70 packets
(edge operands: zero, all ones, the top bits, equal; and random ones) through 128- and
200-bit sums, differences, products, shifts, comparisons, saturating operators, slices,
concatenations, a select on a 128-bit field, and int<16> arithmetic. wide_signed.stf holds
what simple_switch sent back (regenerate with tests/p4/wide_signed_stf.py)."""

from __future__ import annotations

import sys
from concurrent import futures
from pathlib import Path

import grpc
import pytest
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2

from sliceportal_p4rt.client import Session, WriteFailed

HERE = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(HERE))

from bmv2_target.server import Faults, P4RuntimeServicer, load_p4info_text  # noqa: E402
from bmv2_target.switch import Switch, SwitchConfig  # noqa: E402
from stf import runner  # noqa: E402

P4 = Path(__file__).resolve().parent / "p4" / "wide_signed.p4"


def _passes(p4: Path, stf: Path, tmp: Path) -> None:
    """``p4`` compiled by p4c and run on the engine against ``stf`` passes (the corpus runner's way)."""
    assert runner.compile_one(p4, tmp) is None
    w = runner.Worker()
    try:
        job = {"json": str(tmp / f"{p4.stem}.json"), "p4info": str(tmp / f"{p4.stem}.p4info.txtpb"), "stf": str(stf)}
        answer = w.ask(job, timeout_s=60)
    finally:
        w.stop()
    assert answer == {"outcome": "pass", "message": ""}


@pytest.mark.needs_p4c
def test_wide_and_signed_fields_as_simple_switch(tmp_path: Path) -> None:
    _passes(P4, P4.with_suffix(".stf"), tmp_path)


@pytest.mark.needs_p4c
def test_a_table_on_a_128_bit_key_runs_and_refuses_entries(tmp_path: Path) -> None:
    # p4c's gauntlet program: `switch` on a table whose key is a 128-bit constant. The
    # engine's keys are u64: the table loads and misses; a write names the key and width.
    from bmv2_target.engine import Engine

    p4 = runner.CORPUS / "gauntlet_switch_nested_table_apply-bmv2.p4"
    assert runner.compile_one(p4, tmp_path) is None
    e = Engine((tmp_path / (p4.stem + ".json")).read_text())
    (ti, (_, keys, actions)) = next((i, t) for i, t in enumerate(e.tables()) if t[1] and t[1][0][2] == 128)
    assert keys[0][1:] == ("exact", 128)
    a = e.action_of(ti, actions[0])
    with pytest.raises(ValueError, match="128 bits"):
        e.insert(ti, [(1, (1 << 64) - 1)], 0, a, [])

    # the same write over P4Runtime: refused by name and code for that update, not an
    # exception that fails the whole RPC as UNKNOWN
    info = load_p4info_text(tmp_path / f"{p4.stem}.p4info.txtpb")
    table = next(t for t in info.tables if t.match_fields and t.match_fields[0].bitwidth == 128)
    servicer = P4RuntimeServicer(Switch(SwitchConfig(1, 64, None)), 1, Faults(0, 0))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=2))
    servicer.add_to_server(server)
    port = server.add_insecure_port("127.0.0.1:0")
    server.start()
    session = Session(f"127.0.0.1:{port}", 1, 1)
    try:
        session.ensure_primary()
        session.set_pipeline(info, (tmp_path / f"{p4.stem}.json").read_bytes(), cookie=1)
        update = p4runtime_pb2.Update(type=p4runtime_pb2.Update.INSERT)
        entry = update.entity.table_entry
        entry.table_id = table.preamble.id
        entry.match.add(field_id=table.match_fields[0].id).exact.value = (1 << 100).to_bytes(13, "big")
        entry.action.action.action_id = table.action_refs[0].id
        with pytest.raises(WriteFailed) as failed:
            session.write([update])
        assert [(e.code, e.message) for e in failed.value.errors] == [
            (
                code_pb2.UNIMPLEMENTED,
                f"table {table.preamble.name}: key field {table.match_fields[0].name} is 128 bits wide "
                "(this target takes no entries on fields wider than 64 bits)",
            )
        ]
    finally:
        session.close()
        server.stop(None)


NO_STF = sorted((Path(__file__).resolve().parent / "p4" / "no_stf").glob("*.stf"))


@pytest.mark.needs_p4c
@pytest.mark.parametrize("stf", NO_STF, ids=[p.stem for p in NO_STF])
def test_corpus_programs_without_stf_answer_as_simple_switch(stf: Path, tmp_path: Path) -> None:
    # p4c's programs beyond the STF copy that signed / wide support made loadable: random
    # frames with simple_switch's answers (tests/p4/no_stf_gen.py)
    p4 = runner.CORPUS / f"{stf.stem}.p4"
    if not p4.exists():
        p4 = P4.parent / f"{stf.stem}.p4"
    _passes(p4, stf, tmp_path)
