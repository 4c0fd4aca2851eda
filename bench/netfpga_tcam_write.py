"""NetFPGA data plane: TCAM write rate through the driver (shadow bank + verify + flip).

Run: .venv/bin/python bench/netfpga_tcam_write.py   (needs `make -C dataplane/netfpga all`)

Baseline, measured in the same run: raw register writes per second over the same CSR
socket (the SCRATCH register), so the printed ratio is the driver's overhead per entry
(7 words written + 7 read back per entry, plus the diff read of the active bank).
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _results import Results

from sliceportal.rules.ir import Action, Rule, RuleIR
from sliceportal_netfpga import regmap, simulator
from sliceportal_netfpga.csr import CsrClient
from sliceportal_netfpga.driver import Driver
from sliceportal_netfpga.experiment import table2_ir

ROUNDS = 20


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
            # the push writes only the entries the shadow bank lacks, and that bank holds the
            # version before last: three versions whose every entry differs (another RR path),
            # pushed in turn, so each push rewrites the whole 64-entry bank
            base = table2_ir(16)
            plans = [d.lower(RuleIR(lanes=base.lanes, paths=base.paths, rules=tuple(
                Rule(r.match, Action(r.action.slice_id, r.action.lane, (r.action.rr_path + k) % base.paths))
                for r in base.rules))) for k in range(3)]
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
            res.figure("TCAM entries/s through the driver (7 CSR words each)", rate, "entries/s",
                       baseline=raw / 7, baseline_name="raw CSR writes/s / 7 words")
            res.figure("full 64-entry TCAM push", wall / ROUNDS * 1e3, "ms")
            res.write()
        finally:
            sim.stop()


if __name__ == "__main__":
    main()
