"""Generated differential tests of the bundled target against simple_switch_grpc (#30):
diff.p4's tables of every match kind, default actions, direct and indirect counters,
indirect and direct meters, a register, an action profile and an action selector (members,
weighted groups, entries naming either), with seeded random entries and frames
(diff_scenario.py) sent to both over P4Runtime and veth pairs (diff_harness.py); every
Write's answer, every frame out and everything read back afterwards must be the same. A
failure names the seed and how to replay it.

What the bundled target does not run -- a selector hashing by another algorithm than
crc16, crc32 or identity, an action profile shared by tables -- it refuses at load, naming
the construct; simple_switch_grpc loads those programs.

Root (veth pairs), p4c and simple_switch_grpc: a failure under CI=true without them.
"""

from __future__ import annotations

import sys
from collections.abc import Iterator
from pathlib import Path

import grpc
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent))

from diff_harness import (
    CI_SEEDS,
    ELECTION_IDS,
    HERE,
    Program,
    Side,
    both_switches,
    compare,
    compile_program,
    replay_hint,
)

from sliceportal_p4rt.client import Session

pytestmark = [pytest.mark.needs_root, pytest.mark.needs_p4c, pytest.mark.needs_bmv2]


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> Program:
    return compile_program(HERE / "diff.p4", tmp_path_factory.mktemp("diff"))


@pytest.fixture(scope="module")
def sides() -> Iterator[tuple[Side, Side]]:
    """(simple_switch_grpc, bundled), started once: each test pushes its own pipeline."""
    with both_switches() as both:
        yield both


@pytest.mark.parametrize("seed", CI_SEEDS, ids=[f"seed{s}" for s in CI_SEEDS])
def test_same_answers_frames_and_counters(program: Program, sides: tuple[Side, Side], seed: int) -> None:
    text, diff = compare(*sides, program, seed)
    print(text)
    assert not diff, "\n".join([f"seed {seed}: {len(diff)} differences", *diff, replay_hint(seed)])


@pytest.mark.parametrize(
    ("construct", "named"),
    [
        pytest.param("selector", ("action selector I.group", "hash algorithm xor16"), id="xor16 selector"),
        pytest.param("shared_profile", ("action profile I.shared", "shared by tables"), id="shared profile"),
    ],
)
def test_refused_at_load_by_name(
    construct: str, named: tuple[str, ...], sides: tuple[Side, Side], tmp_path: Path
) -> None:
    program = compile_program(HERE / f"refused_{construct}.p4", tmp_path)
    real, bundled = sides
    s = Session(real.address, 1, next(ELECTION_IDS))
    try:
        s.set_pipeline(program.p4info, program.device_config, cookie=1)  # simple_switch_grpc runs it
    finally:
        s.close()
    s = Session(bundled.address, 1, next(ELECTION_IDS))
    try:
        with pytest.raises(grpc.RpcError) as refused:
            s.set_pipeline(program.p4info, program.device_config, cookie=1)
    finally:
        s.close()
    assert refused.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    details = refused.value.details() or ""
    assert all(word in details for word in named), details
