"""Regenerate wide_signed.stf: packets for wide_signed.p4 with their outputs from the
reference simple_switch (`simple_switch --use-files`, pcap files per port), so the STF
holds BMv2's answers. Needs p4c and simple_switch on PATH:

    python dataplane/bmv2/tests/p4/wide_signed_stf.py
"""

from __future__ import annotations

import random
import struct
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
P4 = HERE / "wide_signed.p4"
OUT = HERE / "wide_signed.stf"

TOP128 = 1 << 127


def operands(rng: random.Random) -> list[tuple[int, int, int, int, int]]:
    """(a, b, c, sa, sb): edges (0, all ones, the top bits, equal) and random values."""
    m128, m200 = (1 << 128) - 1, (1 << 200) - 1
    edges = [
        (0, 0, 0, 0, 0),
        (m128, m128, m200, -1, -1),
        (TOP128, TOP128 - 1, 1 << 199, -32768, 32767),
        (TOP128 - 1, TOP128, (1 << 199) - 1, 32767, -32768),
        (m128, 1, m200, 30000, 30000),
        (1, m128, 1, -30000, 30000),
        (0xFF, 0, 0xFF, 5, -3),
        (0x1234, 0x1234, 0x1234, -7, -7),
    ]
    rand = [
        (rng.getrandbits(128), rng.getrandbits(128), rng.getrandbits(200), rng.randint(-32768, 32767),
         rng.randint(-32768, 32767))
        for _ in range(6)
    ]  # fmt: skip
    return edges + rand


def frame(op: int, a: int, b: int, c: int, sa: int, sb: int) -> bytes:
    eth = bytes.fromhex("0000000000020000000000011234")
    body = op.to_bytes(1, "big") + a.to_bytes(16, "big") + b.to_bytes(16, "big") + c.to_bytes(25, "big")
    body += (sa & 0xFFFF).to_bytes(2, "big") + (sb & 0xFFFF).to_bytes(2, "big")
    body += bytes(16 + 16 + 25 + 2 + 2 + 1)  # results, written by the program
    return eth + body + bytes(4)  # a payload after the header


def write_pcap(path: Path, frames: list[bytes]) -> None:
    with path.open("wb") as f:
        f.write(struct.pack("<IHHiIII", 0xA1B2C3D4, 2, 4, 0, 0, 65535, 1))
        for i, fr in enumerate(frames):
            f.write(struct.pack("<IIII", i, 0, len(fr), len(fr)))
            f.write(fr)


def read_pcap(path: Path) -> list[bytes]:
    data = path.read_bytes()
    out, at = [], 24
    while at + 16 <= len(data):
        _, _, incl, _ = struct.unpack("<IIII", data[at : at + 16])
        out.append(data[at + 16 : at + 16 + incl])
        at += 16 + incl
    return out


def main() -> None:
    rng = random.Random(30)
    frames = [frame(op, *v) for op in range(1, 6) for v in operands(rng)]
    with tempfile.TemporaryDirectory() as tmp:
        t = Path(tmp)
        subprocess.run(["p4c", "--target", "bmv2", "--arch", "v1model", "-o", tmp, str(P4)], check=True)
        write_pcap(t / "p0_in.pcap", frames)
        write_pcap(t / "p1_in.pcap", [])
        sw = subprocess.Popen(
            ["simple_switch", "--use-files", "0", "-i", f"0@{t}/p0", "-i", f"1@{t}/p1", str(t / "wide_signed.json")],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            outs: list[bytes] = []
            while time.monotonic() < deadline:
                time.sleep(1)
                if (t / "p1_out.pcap").exists():
                    outs = read_pcap(t / "p1_out.pcap")
                    if len(outs) == len(frames):
                        break
        finally:
            sw.terminate()
            sw.wait()
    if len(outs) != len(frames):
        sys.exit(f"simple_switch sent {len(outs)} of {len(frames)} packets")
    lines = [
        "# wide_signed.p4 on simple_switch (behavioral-model 1.15.5): tests/p4/wide_signed_stf.py",
    ]
    for fin, fout in zip(frames, outs, strict=True):
        lines += [f"packet 0 {fin.hex()}", f"expect 1 {fout.hex()}$"]
    OUT.write_text("\n".join(lines) + "\n")
    print(f"{OUT}: {len(frames)} packets")


if __name__ == "__main__":
    main()
