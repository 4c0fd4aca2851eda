"""Seed 000 §6 on the simulated card: the Table 2 rule set, Table 3 traffic and the
per-lane delay / loss / jitter of Table 5 — one implementation for the test and the bench.

``table2_ir``: slice s uses the subnet 10.s.0.0/24, RR path s mod paths, Table 2 maps the
ports to lanes 0-3 (one rule per slice and lane: 64 rules for 16 slices).
``table5``: the whole experiment through the project's own pipeline — the compiler builds
the Table 3 configuration (``rules.scenarios``), the driver writes it over CSR into
``sp_sim``, the traffic generator writes Table 3's flows (``traffic.scenarios``), the card
forwards them with its DMA drain below the ingress rate, and the meter measures each lane
from the simulated cycles (``traffic.capture.measure_cycle_capture``, RFC 3550 jitter).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from sliceportal.drivers.contract import Counters
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.rules.scenarios import NETFPGA_TARGET, table3_config
from sliceportal.traffic.capture import measure_cycle_capture
from sliceportal.traffic.meter import GroupStats, Meter
from sliceportal.traffic.pcapgen import write_pcap
from sliceportal.traffic.profiles import ConstantRate
from sliceportal.traffic.scenarios import table3
from sliceportal_netfpga import simulator
from sliceportal_netfpga.driver import Driver

CLOCK_HZ = 200e6
USERS = 32
SERVICES = 16
PORT_BLOCK_MASK = 0xFFF8  # 5000-5006 / 5008-5014 / 5016-5022 / 5024-5030 share the top 13 bits


def table2_ir(slices: int, paths: int = 8, lanes: int = 4) -> RuleIR:
    rules = []
    for s in range(slices):
        for block in range(4):
            rules.append(
                Rule(
                    Match(
                        src_ip=Ternary.prefix(0x0A000000 | s << 16, 24, 32),
                        dst_port=Ternary(5000 + 8 * block, PORT_BLOCK_MASK),
                    ),
                    Action(slice_id=s + 1, lane=block * lanes // 4, rr_path=s % paths),
                    note=f"slice {s}: ports {5000 + 8 * block}-{5006 + 8 * block} (Table 2)",
                )
            )
    return RuleIR(lanes=lanes, paths=paths, rules=tuple(rules))


@dataclass(frozen=True)
class Table5:
    lanes: dict[int, GroupStats]  # per lane, pooled over the slices (the paper's bars)
    rules: int  # TCAM entries written
    card: dict[str, str]  # the simulator's STATS
    counters: Counters  # the driver's read-back after the run


def table5(
    slices: int,
    workdir: Path,
    *,
    ingress_gbps: float,
    drain_gbps: float,
    packets_per_flow: int = 4,
    binary: Path | None = None,
) -> Table5:
    """Seed 000 Table 3 traffic of ``slices`` slices through the simulated card, measured per lane."""
    tenants, slice_specs = table3_config(slices)
    compiled = compile_rules(tenants, slice_specs, NETFPGA_TARGET)
    sim = simulator.start(
        workdir / f"sim{slices}.sock",
        "--ingress-gbps",
        str(ingress_gbps),
        "--drain-gbps",
        str(drain_gbps),
        binary=binary or simulator.DEFAULT_BINARY,
    )
    driver = Driver({"address": sim.address})
    try:
        plan = driver.lower(compiled.ir)
        driver.apply(plan, lambda _: None)
        # all slices at once, as 32 x slices users sending together: consecutive packets
        # rotate over slices first (each slice has its own RR path), then services, then users
        flows = sorted(table3(slices), key=lambda sf: (sf.user, sf.service, sf.slice_index))
        sent = write_pcap(
            workdir / "in.pcap", flows, ConstantRate(1e6), packets=packets_per_flow * len(flows), start_ns=0
        )
        sim.command(f"CAPTURE {workdir / 'out.pcap'}")
        sim.command(f"INJECT {workdir / 'in.pcap'}")
        sim.command("RUN")
        card = dict(re.findall(r"(\w+)=(\d+)", sim.command("STATS")))
        counters = driver.counters()
    finally:
        driver.close()
        sim.stop()
    meter = Meter({sf.flow_id: (sf.slice_index, sf.lane(4)) for sf in flows}, sent.sent)
    measure_cycle_capture(workdir / "out.pcap", workdir / "out.pcap.csv", meter)
    per_lane: dict[int, list[GroupStats]] = {}
    for g in meter.report().lanes:
        if g.lane is not None:
            per_lane.setdefault(g.lane, []).append(g)
    return Table5({lane: _pool(gs) for lane, gs in per_lane.items()}, len(compiled.ir.rules), card, counters)


def _pool(groups: list[GroupStats]) -> GroupStats:
    first = groups[0]
    received = sum(g.received for g in groups)
    expected = sum(g.expected for g in groups)
    delays = [(g.delay.mean_us, g.received) for g in groups if g.delay is not None]
    mean = sum(d * n for d, n in delays) / max(sum(n for _, n in delays), 1)
    delay = first.delay.model_copy(update={"mean_us": mean}) if first.delay is not None else None
    return first.model_copy(
        update={
            "slice_index": None,
            "received": received,
            "expected": expected,
            "lost": expected - received,
            "loss_pct": 100 * (expected - received) / expected if expected else 0.0,
            "delay": delay,
            "jitter_us": sum(g.jitter_us * g.received for g in groups) / received if received else 0.0,
            "jitter_max_us": max(g.jitter_max_us for g in groups),
        }
    )
