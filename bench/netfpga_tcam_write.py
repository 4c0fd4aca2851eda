"""NetFPGA data plane: TCAM write rate through the driver (shadow bank + verify + flip).

Run: .venv/bin/python bench/netfpga_tcam_write.py   (needs `make -C dataplane/netfpga all`)

Baseline, measured in the same run: raw register writes per second over the same CSR
socket (the SCRATCH register), so the printed ratio is the driver's overhead per entry
(7 words written + 7 read back per entry, plus the read of both banks for the diff and
the slots).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _results import Results

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal_netfpga import regmap, simulator
from sliceportal_netfpga.csr import CsrClient
from sliceportal_netfpga.driver import Driver

ROUNDS = 20
ENTRIES = 64


def version(k: int, paths: int = 8, lanes: int = 4) -> RuleIR:
    """Version k of a full bank in which every one of the 7 words of every entry differs from
    the other versions' (keys, masks and action shift with k): the driver writes only the
    words the shadow bank lacks, so nothing of an entry may already be there."""
    rules = tuple(
        Rule(
            Match(
                src_ip=Ternary(0x0A00_0000 + (k << 22) + (i << 16), (0xFFFF_F000 << k) & 0xFFFF_FFFF),
                dst_ip=Ternary(0x0B00_0000 + (k << 22) + (i << 16), (0xFFFF_F000 << k) & 0xFFFF_FFFF),
                dst_port=Ternary(((k + 1) << 12) | (i << 6), (0xFFF0 << k) & 0xFFFF),
            ),
            Action(slice_id=1 + k, lane=i % lanes, rr_path=(i + k) % paths),
        )
        for i in range(ENTRIES)
    )
    return RuleIR(lanes=lanes, paths=paths, rules=rules)


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        sim = simulator.start(Path(tmp) / "s.sock")
        try:
            csr = CsrClient(sim.address)
            n = 20000
            t0 = time.perf_counter()
            csr.write_many((regmap.SCRATCH, i) for i in range(n))
            raw = n / (time.perf_counter() - t0)
            csr.close()
            d = Driver({"address": sim.address})
            # the push writes only the words the shadow bank lacks, and that bank holds the
            # version before last: three versions whose every word differs, pushed in turn,
            # so each push rewrites the whole 64-entry bank (448 words)
            plans = [d.lower(version(k)) for k in range(3)]
            for p in plans[1:]:  # both banks filled before timing
                d.apply(p, lambda _: None)
            t0 = time.perf_counter()
            for i in range(ROUNDS):
                d.apply(plans[i % 3], lambda _: None)
            wall = time.perf_counter() - t0
            entries = sum(len(plans[i % 3].tables["tcam"]) for i in range(ROUNDS))
            rate = entries / wall
            d.close()
            print(f"raw CSR writes/s (baseline):   {raw:>10.0f}")
            print(f"TCAM entries/s (driver push):  {rate:>10.0f}   = {rate * 7 / raw:.2f} x baseline in words")
            print(f"full 64-entry push:            {wall / ROUNDS * 1e3:>10.1f} ms")
            res = Results("netfpga_tcam_write")
            res.figure(
                "TCAM entries/s through the driver (7 CSR words each)",
                rate,
                "entries/s",
                baseline=raw / 7,
                baseline_name="raw CSR writes/s / 7 words",
            )
            res.figure("full 64-entry TCAM push", wall / ROUNDS * 1e3, "ms")
            res.write()
        finally:
            sim.stop()


if __name__ == "__main__":
    main()
