"""Pcap generation speed: templates stamped per packet vs. building every packet with scapy.

    .venv/bin/python bench/traffic_pcapgen.py

Baseline (same run): scapy builds each packet and its RawPcapWriter writes it — the
obvious way. Target: >= 200 k packets/s written for the seed 000 / 001 scenarios.
"""

from __future__ import annotations

import tempfile
import time
from pathlib import Path

from _results import Results, quick
from scapy.utils import RawPcapWriter

from sliceportal.traffic.packets import build_bytes, payload
from sliceportal.traffic.pcapgen import write_pcap
from sliceportal.traffic.profiles import ConstantRate
from sliceportal.traffic.scenarios import ScenarioFlow, header_len, table1, table3
from sliceportal.traffic.templates import make_template, make_templates


def scapy_baseline(flows: list[ScenarioFlow], path: Path, n: int) -> float:
    writer = RawPcapWriter(str(path), linktype=1, nano=True)
    writer.write_header(None)
    start = time.perf_counter()
    for i in range(n):
        sf = flows[i % len(flows)]
        size = sf.frame_size - header_len(sf.flow)
        frame = build_bytes(sf.flow, payload(sf.flow_id, i // len(flows), time.time_ns(), size))
        writer.write_packet(frame, sec=i, usec=0)
    writer.close()
    return n / (time.perf_counter() - start)


def template_setup(res: Results) -> None:
    """Per-flow set-up: scapy per flow (baseline) vs one scapy build per shape + patching."""
    flows = table3(16)
    sample = flows[:: len(flows) // 200]
    start = time.perf_counter()
    for sf in sample:
        make_template(sf)
    scapy_ms = (time.perf_counter() - start) / len(sample) * 1e3
    start = time.perf_counter()
    make_templates(flows)
    fast_ms = (time.perf_counter() - start) / len(flows) * 1e3
    print(f"\ntemplates, seed 000 Table 3 with 16 slices ({len(flows)} flows)")
    print(f"  scapy per flow     {scapy_ms:8.3f} ms/flow  ({scapy_ms * len(flows) / 1e3:.1f} s for the scenario)")
    total = fast_ms * len(flows) / 1e3
    print(f"  patched per shape  {fast_ms:8.3f} ms/flow  ({total:.2f} s)  {scapy_ms / fast_ms:.0f}x")
    res.figure(
        f"frame templates, seed 000 Table 3 16 slices ({len(flows)} flows)",
        fast_ms,
        "ms/flow",
        baseline=scapy_ms,
        baseline_name="scapy build per flow",
    )


def ours(flows: list[ScenarioFlow], path: Path, n: int) -> tuple[float, float]:
    """(packets/s excluding template building, template building ms per flow)."""
    start = time.perf_counter()
    make_templates(flows)
    per_flow_ms = (time.perf_counter() - start) / len(flows) * 1e3
    start = time.perf_counter()
    report = write_pcap(path, flows, ConstantRate(1e6), packets=n)
    total = time.perf_counter() - start
    return report.packets / max(total - per_flow_ms * len(flows) / 1e3, 1e-9), per_flow_ms


def main() -> None:
    cases = [
        ("seed 000 Table 3, 1 slice (512 flows, 1500 B)", table3(1)),
        ("seed 001 Table 1, 1500 B (16 flows)", table1(1500)),
        ("seed 001 Table 1, 132 B -> 150 B (16 flows)", table1(132)),
    ]
    print(f"{'scenario':<48} {'scapy pps':>10} {'ours pps':>10} {'ratio':>7} {'tpl ms/flow':>11}  >=200k")
    res = Results("traffic_pcapgen")
    table = res.table("pcap generation", ["scenario", "scapy pps", "ours pps", "ratio", "template ms/flow"])
    with tempfile.TemporaryDirectory() as tmp:
        for name, flows in cases:
            base = scapy_baseline(flows, Path(tmp) / "base.pcap", 3000)
            rate, tpl_ms = ours(flows, Path(tmp) / "ours.pcap", 50_000 if quick() else 300_000)
            ok = "yes" if rate >= 200_000 else "NO"
            print(f"{name:<48} {base:>10.0f} {rate:>10.0f} {rate / base:>6.0f}x {tpl_ms:>11.2f}  {ok}")
            table.rows.append([name, round(base), round(rate), round(rate / base), round(tpl_ms, 2)])
            res.figure(
                f"pcap generation, {name}",
                rate,
                "packets/s",
                baseline=base,
                baseline_name="scapy build per packet",
                goal=">= 200 k packets/s",
                met=rate >= 200_000,
            )
    template_setup(res)
    res.write()


if __name__ == "__main__":
    main()
