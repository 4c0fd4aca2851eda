"""Meter speed: pcap analysis vs. scapy dissection, and the live capture's zero-loss ceiling.

    .venv/bin/python bench/traffic_meter.py       (the live part needs root)

Offline baseline (same run): scapy dissects each frame and the payload header is read
from its innermost Raw layer. Ours: ``wire.locate`` + ``Meter.add`` per frame.
Live: the sender (this process) sends seed 001 Table 1 traffic at rising rates onto a veth;
the meter captures on the peer in its own process (``sliceportal traffic measure``); the
ceiling is the highest rate it receives everything at.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _results import Results, quick
from scapy.layers.l2 import Ether
from scapy.packet import Raw
from scapy.utils import RawPcapReader

from sliceportal.traffic.capture import measure_pcap
from sliceportal.traffic.meter import Meter
from sliceportal.traffic.packets import parse_payload
from sliceportal.traffic.pcapgen import write_pcap
from sliceportal.traffic.profiles import ConstantRate
from sliceportal.traffic.scenarios import table1, table3


def offline(res: Results) -> None:
    flows = table3(1)
    with tempfile.TemporaryDirectory() as tmp:
        pcap = Path(tmp) / "t3.pcap"
        write_pcap(pcap, flows, ConstantRate(1e6), packets=200_000)
        n_base = 3000
        start = time.perf_counter()
        for i, (frame, _meta) in enumerate(RawPcapReader(str(pcap))):
            if i == n_base:
                break
            parse_payload(bytes(Ether(frame).getlayer(Raw, nb=1).load))
        base = n_base / (time.perf_counter() - start)
        meter = Meter({sf.flow_id: (sf.slice_index, sf.lane(4)) for sf in flows})
        start = time.perf_counter()
        frames = measure_pcap(pcap, meter)
        read = time.perf_counter() - start
        start = time.perf_counter()
        report = meter.report()
        rep = time.perf_counter() - start
        assert report.total.received == frames and report.total.lost == 0
    rate = frames / read
    print("offline, seed 000 Table 3 (1 slice) pcap, 200 k frames of 1500 B")
    print(f"  scapy dissection {base:>9.0f} frames/s")
    print(f"  ours             {rate:>9.0f} frames/s   ratio {rate / base:.0f}x   (report: {rep * 1e3:.0f} ms)")
    res.figure(
        "meter, offline pcap (1500 B frames)",
        rate,
        "frames/s",
        baseline=base,
        baseline_name="scapy dissection of the same frames",
    )


def live(res: Results) -> None:
    sys.path.insert(0, str(Path(__file__).parent))
    from traffic_common import veth_wire

    from sliceportal.traffic.sender import open_sender, send

    flows = table1(512)
    print("\nlive capture (meter in its own process), seed 001 Table 1, 512 B frames, 2 s per rate")
    print(f"{'asked pps':>10} {'sent pps':>9} {'sent':>8} {'received':>9} {'loss %':>7} {'p50 µs':>8} {'p99 µs':>8}")
    table = res.table(
        "live capture, seed 001 Table 1, 512 B frames, 2 s per rate",
        ["asked pps", "sent pps", "sent", "received", "loss %", "p50 µs", "p99 µs"],
    )
    with veth_wire("meter") as (ns, tx, rx), tempfile.TemporaryDirectory() as tmp:
        sock = open_sender(tx, ns)
        for asked in (10_000, 100_000) if quick() else (10_000, 50_000, 100_000, 150_000, 200_000, 300_000):
            out = Path(tmp) / f"r{asked}.json"
            cmd = [
                sys.executable,
                "-c",
                "from sliceportal.traffic.cli import app; app()",
                "measure",
                "--iface",
                rx,
                "--netns",
                ns,
                "--duration",
                "30",
                "--idle",
                "1.0",
                "--scenario",
                "table1",
                "--size",
                "512",
                "--lanes",
                "8",
                "--out",
                str(out),
            ]
            proc = subprocess.Popen(cmd, stderr=subprocess.PIPE, text=True)
            assert proc.stderr is not None
            for line in proc.stderr:  # the meter says when its socket is open
                if line.startswith("capturing on"):
                    break
            r = send(sock, flows, rate_pps=asked, duration_s=2.0)
            proc.wait(timeout=60)
            report = json.loads(out.read_text())["total"]
            loss = 100 * (r.packets - report["received"]) / r.packets
            delay = report["delay"] or {}
            print(
                f"{asked:>10} {(r.packets - 1) / r.duration_s:>9.0f} {r.packets:>8} "
                f"{report['received']:>9} {loss:>7.2f} "
                f"{delay.get('p50_us', 0):>8.1f} {delay.get('p99_us', 0):>8.1f}"
            )
            table.rows.append(
                [
                    asked,
                    round((r.packets - 1) / r.duration_s),
                    r.packets,
                    report["received"],
                    round(loss, 2),
                    delay.get("p50_us"),
                    delay.get("p99_us"),
                ]
            )
        sock.close()


if __name__ == "__main__":
    results = Results("traffic_meter")
    offline(results)
    if os.geteuid() == 0:
        live(results)
    else:
        print("live part skipped: needs root")
    results.write()
