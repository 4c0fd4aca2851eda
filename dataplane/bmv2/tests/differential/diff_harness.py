"""The generated differential run: one seed's scenario (diff_scenario.py) on
``simple_switch_grpc`` and on the bundled target, each on veth pairs of its own, and what
differs between the two.

Both get the same pipeline (p4c's build of diff.p4) and the same Write RPCs over P4Runtime,
then the same frames on the same ports; compared: each Write's per-update status, which
port(s) each frame left by with which bytes (or that both dropped it), and afterwards what
both hold, read back over P4Runtime: entries, default actions, direct counters, indirect
counter cells, register cells and meter configs.

Replay a seed (root, p4c and simple_switch_grpc on PATH), from the repository:

    .venv/bin/python dataplane/bmv2/tests/differential/diff_harness.py --seed N
"""

from __future__ import annotations

import argparse
import itertools
import os
import select
import socket
import sys
import tempfile
import time
from collections.abc import Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path

HERE = Path(__file__).resolve().parent
BMV2 = HERE.parents[1]  # dataplane/bmv2: bmv2_target and stf
for extra in (BMV2, HERE):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bmv2_target.packet_io import open_port, receive  # noqa: E402
from bmv2_target.testing import Target  # noqa: E402
from diff_scenario import (  # noqa: E402
    ETHER_TYPE,
    PORTS,
    PROBE,
    Frame,
    Generator,
    Scenario,
    marker_frame,
)
from google.protobuf import text_format  # noqa: E402
from p4.config.v1 import p4info_pb2  # noqa: E402
from p4.v1 import p4runtime_pb2  # noqa: E402
from stf.runner import compile_one  # noqa: E402

from sliceportal_p4rt.client import Session, WriteFailed  # noqa: E402
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc  # noqa: E402
from sliceportal_testbed.veths import veth_pairs  # noqa: E402

PROGRAM = HERE / "diff.p4"
CI_SEEDS = (1, 2, 3, 4, 5)
PACKETS = 300
CHUNK = 24  # frames sent before the markers: fewer than a queue holds (64) on one port
MARKER_SEQ = 1 << 31  # markers' sequence numbers; the scenario's frames count from 0
WAIT_S = 30.0  # for a chunk's markers, on a loaded machine
# A fresh election id per session: the switch may not have seen the last one's stream end
# yet, and a second stream with its id would be refused.
ELECTION_IDS = itertools.count(1)
PROBE_AT = 14  # the probe header follows Ethernet
PROBE_FIELDS = (
    "seq", "kind", "k_exact", "k_tern", "k_lpm", "k_range", "k_opt",
    "c_index", "m_index", "color", "bcolor", "seen", "trace", "eport", "flags", "dcolor",
)  # fmt: skip


@dataclass(frozen=True)
class Program:
    p4info: p4info_pb2.P4Info
    device_config: bytes  # p4c's BMv2 JSON


def compile_program(p4: Path, out: Path) -> Program:
    """p4c's build of ``p4`` (as stf.runner compiles p4c's corpus)."""
    failed = compile_one(p4, out)
    if failed is not None:
        raise RuntimeError(f"p4c could not compile {p4.name}: {failed}")
    info = text_format.Parse((out / f"{p4.stem}.p4info.txtpb").read_text(), p4info_pb2.P4Info())
    return Program(info, (out / f"{p4.stem}.json").read_bytes())


@dataclass(frozen=True)
class Side:
    """A switch under test: its P4Runtime address and, per switch port, the test's end."""

    name: str
    address: str
    ends: dict[int, str]


@dataclass
class Outcome:
    writes: list[tuple[str, tuple[int, ...]]] = field(default_factory=list)  # per Write: status, codes
    frames: dict[int, list[tuple[int, bytes]]] = field(default_factory=dict)  # seq -> (egress port, frame)
    state: dict[str, list[str]] = field(default_factory=dict)  # what was read back, by kind
    lost_markers: int = 0  # a chunk's markers that never came (the traffic stopped there)


@contextmanager
def both_switches() -> Iterator[tuple[Side, Side]]:
    """Veth pairs for both switches, simple_switch_grpc and the bundled target on them
    (root); all removed on exit. The switch owns ``<tag><side><port>s``, the test the ``t`` end."""
    tag = f"df{os.getpid() % 100000}"
    ends = {(who, p): (f"{tag}{who}{p}s", f"{tag}{who}{p}t") for who in "rb" for p in PORTS}
    with ExitStack() as stack:
        stack.enter_context(veth_pairs(*ends.values()))
        real = stack.enter_context(start_simple_switch_grpc({p: ends["r", p][0] for p in PORTS}, priority_queues=1))
        bundled = Target("--priority-queues", "1", *[a for p in PORTS for a in ("-i", f"{p}@{ends['b', p][0]}")])
        stack.callback(bundled.stop)
        yield (
            Side("simple_switch_grpc", real.address, {p: ends["r", p][1] for p in PORTS}),
            Side("bundled", bundled.address, {p: ends["b", p][1] for p in PORTS}),
        )


# ---- one side ------------------------------------------------------------------------------


def run(side: Side, program: Program, sc: Scenario) -> Outcome:
    out = Outcome()
    session = Session(side.address, 1, next(ELECTION_IDS))
    try:
        session.set_pipeline(program.p4info, program.device_config, cookie=sc.seed)  # all state starts empty
        markers = MARKER_SEQ
        for step in sc.steps:
            try:
                session.write(step.writes)
                out.writes.append(("OK", (0,) * len(step.writes)))
            except WriteFailed as e:
                codes = [0] * len(step.writes)
                for err in e.errors:
                    codes[err.index] = err.code
                out.writes.append((e.code.name, tuple(codes)))
            markers = send(side, step.frames, sc.nonce, markers, out)
        out.state = read_state(session, program.p4info)
    finally:
        session.close()
    return out


def send(side: Side, frames: Sequence[Frame], nonce: int, markers: int, out: Outcome) -> int:
    """The frames in chunks, each followed by a marker from every port to every port: a
    switch keeps the order of frames from one ingress port to one egress port, so when the
    markers are all back, every frame of the chunk has left or been dropped. Markers are
    numbered from ``markers``; returns the next number."""
    rx = {p: open_port(end) for p, end in side.ends.items()}
    tx = {p: socket.socket(socket.AF_PACKET, socket.SOCK_RAW) for p in PORTS}
    try:
        for p, s in tx.items():
            s.bind((side.ends[p], 0))
        for s in rx.values():
            s.setblocking(False)
        for start in range(0, len(frames), CHUNK):
            for f in frames[start : start + CHUNK]:
                tx[f.port].send(f.data)
            expected = set()
            for q in PORTS:
                for p in PORTS:
                    tx[q].send(marker_frame(markers, nonce, p))
                    expected.add(markers)
                    markers += 1
            if not collect(rx, nonce, expected, out):
                out.lost_markers += len(expected)
                break
    finally:
        for s in [*rx.values(), *tx.values()]:
            s.close()
    return markers


def collect(rx: dict[int, socket.socket], nonce: int, markers: set[int], out: Outcome) -> bool:
    """Receive until every marker of ``markers`` is back (False at the deadline); this
    run's frames and markers go into ``out.frames`` by sequence number, others are ignored."""
    by_fd = {s.fileno(): p for p, s in rx.items()}
    deadline = time.monotonic() + WAIT_S
    while markers:
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        ready, _, _ = select.select(list(rx.values()), [], [], left)
        for s in ready:
            while True:
                try:
                    data = receive(s)
                except BlockingIOError:
                    break
                if data is None:  # what the test sent on this end
                    continue
                seq = own_seq(data, nonce)
                if seq is not None:
                    markers.discard(seq)
                    out.frames.setdefault(seq, []).append((by_fd[s.fileno()], data))
    return True


def own_seq(data: bytes, nonce: int) -> int | None:
    """The sequence number of a frame of this run (its nonce after the probe header)."""
    nonce_at = PROBE_AT + PROBE.size
    if len(data) < nonce_at + 4 or int.from_bytes(data[12:14], "big") != ETHER_TYPE:
        return None
    if int.from_bytes(data[nonce_at : nonce_at + 4], "big") != nonce:
        return None
    return int.from_bytes(data[PROBE_AT : PROBE_AT + 4], "big")


def read_state(session: Session, info: p4info_pb2.P4Info) -> dict[str, list[str]]:
    """What the switch holds, as sorted text lines per kind (one line per entry or cell)."""
    E = p4runtime_pb2.Entity

    def lines(entities: Sequence[p4runtime_pb2.Entity]) -> list[str]:
        return sorted(text_format.MessageToString(e, as_one_line=True) for e in entities)

    state = {"entries": lines(session.read([E(table_entry=p4runtime_pb2.TableEntry())]))}
    for t in info.tables:
        name = t.preamble.name
        default = E(table_entry=p4runtime_pb2.TableEntry(table_id=t.preamble.id, is_default_action=True))
        state[f"default action of {name}"] = lines(session.read([default]))
    for d in info.direct_counters:
        read = E(direct_counter_entry=p4runtime_pb2.DirectCounterEntry())
        read.direct_counter_entry.table_entry.table_id = d.direct_table_id
        state[f"direct counter {d.preamble.name}"] = lines(session.read([read]))
    for c in info.counters:
        cells = session.read([E(counter_entry=p4runtime_pb2.CounterEntry(counter_id=c.preamble.id))])
        state[f"counter {c.preamble.name}"] = lines([e for e in cells if e.counter_entry.data.packet_count])
    # No registers: simple_switch_grpc's P4Runtime server (PI) answers UNIMPLEMENTED to a
    # register read. diff.p4 writes the cell into every frame and marker instead.
    for p in info.action_profiles:
        name, pid = p.preamble.name, p.preamble.id
        members = session.read([E(action_profile_member=p4runtime_pb2.ActionProfileMember(action_profile_id=pid))])
        groups = session.read([E(action_profile_group=p4runtime_pb2.ActionProfileGroup(action_profile_id=pid))])
        state[f"members of {name}"], state[f"groups of {name}"] = lines(members), lines(groups)
        # the first of each read alone too (PI asks the target for that one)
        for m in members[:1]:
            one = p4runtime_pb2.ActionProfileMember(action_profile_id=pid, member_id=m.action_profile_member.member_id)
            state[f"member {one.member_id} of {name}"] = lines(session.read([E(action_profile_member=one)]))
        for g in groups[:1]:
            group = p4runtime_pb2.ActionProfileGroup(action_profile_id=pid, group_id=g.action_profile_group.group_id)
            state[f"group {group.group_id} of {name}"] = lines(session.read([E(action_profile_group=group)]))
    for dm in info.direct_meters:
        read = E(direct_meter_entry=p4runtime_pb2.DirectMeterEntry())
        read.direct_meter_entry.table_entry.table_id = dm.direct_table_id
        state[f"direct meter {dm.preamble.name}"] = lines(session.read([read]))
    for m in info.meters:
        cells = session.read([E(meter_entry=p4runtime_pb2.MeterEntry(meter_id=m.preamble.id))])
        state[f"meter {m.preamble.name}"] = lines([e for e in cells if e.meter_entry.HasField("config")])
    return state


# ---- both sides ----------------------------------------------------------------------------


def probe_text(data: bytes) -> str:
    """A frame as its probe header's fields (and the rest as hex), for the reader of a diff."""
    values = PROBE.unpack_from(data, PROBE_AT)
    fields = " ".join(f"{n}={v:#x}" for n, v in zip(PROBE_FIELDS, values, strict=True))
    return f"dst={data[0:6].hex()} src={data[6:12].hex()} {fields} len={len(data)}"


def answer_text(frames: list[tuple[int, bytes]]) -> str:
    return "; ".join(f"port {p}: {probe_text(d)}" for p, d in sorted(frames)) or "dropped"


def differing_fields(a: list[tuple[int, bytes]], b: list[tuple[int, bytes]]) -> list[str] | None:
    """Where two single answers differ (port, probe fields, the rest); None unless both are one frame."""
    if len(a) != 1 or len(b) != 1:
        return None
    (pa, da), (pb, db) = a[0], b[0]
    end = PROBE_AT + PROBE.size
    where = ["port"] if pa != pb else []
    where += [n for n, x, y in zip(("dst", "src"), (da[0:6], da[6:12]), (db[0:6], db[6:12]), strict=True) if x != y]
    pairs = zip(PROBE_FIELDS, PROBE.unpack_from(da, PROBE_AT), PROBE.unpack_from(db, PROBE_AT), strict=True)
    where += [n for n, x, y in pairs if x != y]
    return where + (["payload"] if da[end:] != db[end:] else [])


def differences(sc: Scenario, real: Outcome, bundled: Outcome) -> list[str]:
    """Every difference, as lines a reader can follow (empty: none)."""
    diff = []
    for n, (a, b) in enumerate(zip(real.writes, bundled.writes, strict=True)):
        if a != b:
            which = [i for i, (x, y) in enumerate(zip(a[1], b[1], strict=True)) if x != y]
            for i in which[:5]:
                u = text_format.MessageToString(sc.steps[n].writes[i], as_one_line=True)
                diff.append(f"write {n} update {i}: simple_switch_grpc code {a[1][i]}, bundled {b[1][i]}: {u}")
            if not which:
                diff.append(f"write {n}: simple_switch_grpc {a[0]}, bundled {b[0]}")
    if real.lost_markers or bundled.lost_markers:
        diff.append(f"markers lost: simple_switch_grpc {real.lost_markers}, bundled {bundled.lost_markers}")
    sent = {f.seq: f for f in sc.frames}
    seqs = sorted({*sent, *real.frames, *bundled.frames})
    wrong = [seq for seq in seqs if sorted(real.frames.get(seq, [])) != sorted(bundled.frames.get(seq, []))]
    for seq in wrong[:10]:
        f = sent.get(seq)
        diff.append(f"frame {seq} in on port {f.port}: {probe_text(f.data)}" if f else f"marker {seq - MARKER_SEQ}")
        diff.append(f"  simple_switch_grpc: {answer_text(real.frames.get(seq, []))}")
        diff.append(f"  bundled:            {answer_text(bundled.frames.get(seq, []))}")
        if (fields := differing_fields(real.frames.get(seq, []), bundled.frames.get(seq, []))) is not None:
            diff.append(f"  differ in: {', '.join(fields)}")
    if len(wrong) > 10:
        diff.append(f"... and {len(wrong) - 10} more frames differ")
    for kind in real.state:
        here, there = set(real.state[kind]), set(bundled.state.get(kind, []))
        diff += [f"{kind}: only simple_switch_grpc has {x}" for x in sorted(here - there)]
        diff += [f"{kind}: only bundled has {x}" for x in sorted(there - here)]
    return diff


def summary(sc: Scenario, o: Outcome) -> str:
    """What a scenario exercised (as simple_switch_grpc answered it)."""
    out = [d for seq, frames in o.frames.items() if seq < MARKER_SEQ for d in frames]
    colors = sorted({PROBE.unpack_from(d, PROBE_AT)[9] for _, d in out})
    dcolors = sorted({PROBE.unpack_from(d, PROBE_AT)[15] for _, d in out})
    selected = sum(1 for _, d in out if PROBE.unpack_from(d, PROBE_AT)[14] & 32)  # t_select hit
    failed = sum(1 for _, codes in o.writes for c in codes if c)
    updates = sum(len(step.writes) for step in sc.steps)
    return (
        f"seed {sc.seed}: {updates} updates ({failed} refused), {len(sc.frames)} frames: "
        f"{len(out)} out, {len(sc.frames) - len(out)} dropped; colors {colors}, direct meter colors {dcolors}; "
        f"{selected} of those out hit t_select (a group or a member)"
    )


def replay_hint(seed: int) -> str:
    return f"replay: .venv/bin/python {Path(__file__).relative_to(BMV2.parents[1])} --seed {seed}"


def compare(real: Side, bundled: Side, program: Program, seed: int, packets: int = PACKETS) -> tuple[str, list[str]]:
    """Run seed ``seed`` on both sides: its summary and the differences."""
    sc = Generator(program.p4info, seed).scenario(packets)
    a = run(real, program, sc)
    b = run(bundled, program, sc)
    return summary(sc, a), differences(sc, a, b)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seed", type=int, action="append", help="a seed to run (repeatable); default the CI's")
    ap.add_argument("--packets", type=int, default=PACKETS)
    args = ap.parse_args(argv)
    differ = 0
    with tempfile.TemporaryDirectory() as tmp, both_switches() as (real, bundled):
        program = compile_program(PROGRAM, Path(tmp))
        for seed in args.seed or CI_SEEDS:
            text, diff = compare(real, bundled, program, seed, args.packets)
            print(text)
            print("\n".join(diff) or "  no difference")
            differ += bool(diff)
    return 1 if differ else 0


if __name__ == "__main__":
    sys.exit(main())
