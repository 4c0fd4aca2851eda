"""NetFPGA data plane: cycles per packet and line rate at 200 MHz (64 ... 1500 B), and the
simulator's own speed.

Run: .venv/bin/python bench/netfpga_throughput.py   (needs `make -C dataplane/netfpga all`)

The model is fed back to back with an unthrottled DMA side, so the pipeline itself is
the limit. Baseline, measured in the same run: the AXI4-Stream bus bound, one 32-byte beat
per cycle (ceil(size / 32) cycles per packet). Printed: cycles per packet, the ratio to
that bound, Mpps and Gb/s at 200 MHz, and the ratio to a 10 Gb/s SUME port. For the
simulator: simulated packets per wall second and its slowdown against the 200 MHz card.
"""

from __future__ import annotations

import math
import tempfile
import time
from pathlib import Path

from _results import Results
from scapy.utils import RawPcapWriter

from sliceportal.traffic.packets import Encap, Flow, build_bytes
from sliceportal_netfpga import simulator

CLOCK_HZ = 200e6
PACKETS = 4000
SIZES = (64, 128, 256, 512, 1024, 1500)


def frames(size: int) -> list[bytes]:
    """Full 5G nesting where it fits in `size`, plain IPv4 / UDP below that."""
    out = []
    for i in range(64):
        f = Flow(f"10.0.{i}.1", "10.255.0.1", 5000 + 2 * (i % 16), dscp=i % 8)
        if len(build_bytes(f)) > size:
            f = Flow(f.src_ip, f.dst_ip, f.dst_port, dscp=f.dscp, encap=Encap.PLAIN)
        out.append(build_bytes(f, bytes(max(0, size - len(build_bytes(f))))))
    return out


def main() -> None:
    with tempfile.TemporaryDirectory() as tmp:
        d = Path(tmp)
        # 1000 Gb/s both ways: the pacing never binds, only the RTL does.
        sim = simulator.start(d / "s.sock", "--ingress-gbps", "1000", "--drain-gbps", "1000")
        res = Results("netfpga_throughput")
        table = res.table(
            "NetFPGA RTL throughput (Verilator, 200 MHz)",
            ["frame B", "cycles/packet", "bus bound", "ratio", "Mpps", "Gb/s", "x 10G"],
        )
        try:
            print(
                f"{'size B':>7} {'cyc/pkt':>8} {'bus bound':>9} {'ratio':>6} {'Mpps':>7} {'Gb/s':>7} "
                f"{'x10G':>6} {'sim pkt/s':>10} {'slowdown':>9}"
            )
            for size in SIZES:
                fr = frames(size)
                w = RawPcapWriter(str(d / "in.pcap"), linktype=1, sync=False)
                for i in range(PACKETS):
                    w.write(fr[i % len(fr)])
                w.close()
                start_cycle = int(sim.command("STATS").split()[0].split("=")[1])
                sim.command(f"INJECT {d / 'in.pcap'}")
                t0 = time.perf_counter()
                reply = sim.command("RUN").split()
                wall = time.perf_counter() - t0
                cycles = int(reply[0]) - start_cycle
                real = len(fr[0])
                # RUN ends after a quiet tail of 64 cycles: not part of the packets' time.
                per_pkt = (cycles - 64) / PACKETS
                bound = math.ceil(real / 32)
                mpps = CLOCK_HZ / per_pkt / 1e6
                gbps = mpps * 1e6 * real * 8 / 1e9
                slowdown = CLOCK_HZ / (cycles / wall)
                print(
                    f"{real:>7} {per_pkt:>8.2f} {bound:>9} {bound / per_pkt:>6.2f} {mpps:>7.2f} {gbps:>7.2f} "
                    f"{gbps / 10:>6.2f} {PACKETS / wall:>10.0f} {slowdown:>8.0f}x"
                )
                table.rows.append(
                    [
                        real,
                        round(per_pkt, 2),
                        bound,
                        round(bound / per_pkt, 2),
                        round(mpps, 2),
                        round(gbps, 2),
                        round(gbps / 10, 2),
                    ]
                )
                if size == 64:
                    res.figure(
                        "64 B frames, cycles/packet",
                        per_pkt,
                        "cycles",
                        baseline=bound,
                        baseline_name="AXI-Stream bus bound (32 B/beat)",
                        goal="<= 3 cycles/packet (>= 66 Mpps at 200 MHz)",
                        met=per_pkt <= 3,
                    )
            res.write()
        finally:
            sim.stop()


if __name__ == "__main__":
    main()
