"""Regenerate no_stf/*.stf: for programs of p4c's corpus that have no STF file in the copy
and use what the engine runs since issue #30's signed and wide-field support (and for
union_stack.p4 here), random frames
(some shaped as IPv4 / TCP) and simple_switch's answers to them, so the engine is held to
BMv2 on programs beyond the STF copy. Needs p4c and simple_switch on PATH:

    python dataplane/bmv2/tests/p4/no_stf_gen.py
"""

from __future__ import annotations

import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parents[1]))

from stf import runner  # noqa: E402
from wide_signed_stf import read_pcap, write_pcap  # noqa: E402

PROGRAMS = [
    "arith5-bmv2",  # int<32> >> a run-time amount into int<64>
    "gauntlet_int_casting-bmv2",
    "gauntlet_action_return-bmv2",
    "checksum3-bmv2",
    "issue3488-bmv2",
    "issue3488-1-bmv2",
    "union_stack",  # tests/p4/union_stack.p4: extracts into a stack of header unions
    "test-parserinvalidargument-error-bmv2",  # extract_VL: PacketTooShort before HeaderTooShort
]
PORTS = range(16)
FRAMES = 80
BATCH = 40  # within simple_switch's queue depth (64): more at once are dropped there


def frames_for(rng: random.Random) -> list[bytes]:
    out = []
    for i in range(FRAMES):
        n = rng.choice([14, 20, 34, 40, 54, 60, 64, 100])
        f = bytearray(rng.getrandbits(8) for _ in range(n))
        if i % 4 in (1, 2) and n >= 34:
            f[12:14], f[14] = b"\x08\x00", 0x45
            if i % 4 == 2:
                f[23] = 6
        out.append(bytes(f))
    return out


def union_stack_frames(rng: random.Random) -> list[bytes]:
    """Ethernet, a 5-byte report, then tags (1: a one-byte member follows, 2: two bytes,
    else the end), up to three members (the third overflows the stack), some cut short."""
    out = []
    for _ in range(FRAMES):
        f = bytearray(rng.getrandbits(8) for _ in range(19))
        for _ in range(rng.randint(0, 3)):
            kind = rng.choice([1, 2])
            f += bytes([kind]) + bytes(rng.getrandbits(8) for _ in range(kind))
        f += bytes([rng.choice([0, 7])])
        if rng.random() < 0.2:
            f = f[: rng.randint(14, len(f))]
        out.append(bytes(f + bytes(rng.randint(0, 4))))
    return out


def simple_switch(json_path: Path, frames: list[bytes]) -> dict[int, list[bytes]]:
    """The frames into port 0; what each port sent, in order."""
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        args = ["simple_switch", "--use-files", "0"]
        for p in PORTS:
            write_pcap(t / f"p{p}_in.pcap", frames if p == 0 else [])
            args += ["-i", f"{p}@{t}/p{p}"]
        sw = subprocess.Popen([*args, str(json_path)], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            time.sleep(3)
            last = -1
            for _ in range(30):  # until two looks a second apart agree
                outs = {p: read_pcap(t / f"p{p}_out.pcap") for p in PORTS if (t / f"p{p}_out.pcap").exists()}
                n = sum(len(v) for v in outs.values())
                if n == last:
                    break
                last = n
                time.sleep(1)
        finally:
            sw.terminate()
            sw.wait()
        return outs


def main() -> None:
    for name in PROGRAMS:
        p4 = runner.CORPUS / f"{name}.p4"
        if not p4.exists():
            p4 = HERE / f"{name}.p4"
        rng = random.Random(name)
        frames = union_stack_frames(rng) if name == "union_stack" else frames_for(rng)
        with tempfile.TemporaryDirectory() as tmp:
            err = runner.compile_one(p4, Path(tmp))
            if err:
                sys.exit(f"{name}: {err}")
            outs: dict[int, list[bytes]] = {}
            for i in range(0, len(frames), BATCH):
                for p, fs in simple_switch(Path(tmp) / f"{name}.json", frames[i : i + BATCH]).items():
                    outs.setdefault(p, []).extend(fs)
        lines = [f"# {name} on simple_switch (behavioral-model 1.15.5): tests/p4/no_stf_gen.py"]
        lines += [f"packet 0 {f.hex()}" for f in frames]
        for p, fs in sorted(outs.items()):
            lines += [f"expect {p} {f.hex()}$" for f in fs]
        (HERE / "no_stf" / f"{name}.stf").write_text("\n".join(lines) + "\n")
        print(f"{name}: {len(frames)} frames, {sum(len(v) for v in outs.values())} out")


if __name__ == "__main__":
    main()
