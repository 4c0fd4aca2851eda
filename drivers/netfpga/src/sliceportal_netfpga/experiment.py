"""Seed 000 §6 on the simulated card: the Table 2 rule set, Table 3 traffic (scaled down)
and the per-lane delay / loss / jitter of Table 5.

Slice s uses the subnet 10.s.0.0/24 (32 users, 10.s.0.1 ...), RR path s mod paths, and
16 services on UDP 5000 ... 5030 step 2 with DSCP round robin 0-7 (Table 3); Table 2
maps the ports to lanes 0-3 (one rule per slice and lane: 64 rules for 16 slices).
"""

from __future__ import annotations

import csv
import itertools
import statistics
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from scapy.utils import RawPcapWriter

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Flow, build_bytes

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


def table3_flows(slices: int) -> Iterator[Flow]:
    for s in range(slices):
        for u in range(USERS):
            for svc in range(SERVICES):
                yield Flow(f"10.{s}.0.{u + 1}", "10.255.0.1", 5000 + 2 * svc, dscp=svc % 8)


def _csum_update(csum: int, old: int, new: int) -> int:
    """RFC 1624 incremental update of a ones'-complement checksum for one 16-bit word."""
    c = (~csum & 0xFFFF) + (~old & 0xFFFF) + new
    c = (c & 0xFFFF) + (c >> 16)
    c = (c & 0xFFFF) + (c >> 16)
    return ~c & 0xFFFF


class FrameFactory:
    """Frames of many Table 3 flows from one scapy-built template.

    Building thousands of nested packets with scapy takes minutes; the flows differ only
    in the innermost source address, destination port and DSCP, so the template is
    patched there and the innermost IPv4 / UDP checksums updated incrementally. Offsets
    are found by diffing builder outputs, and ``check`` compares with the builder.
    """

    def __init__(self, template: Flow, payload_len: int) -> None:
        self.template, self.payload = template, bytes(payload_len)
        base = build_bytes(template, self.payload)
        self.base = base

        def diff(other: Flow) -> list[int]:
            b = build_bytes(other, self.payload)
            return [i for i in range(len(base)) if base[i] != b[i]]

        from dataclasses import replace

        tos = diff(replace(template, dscp=template.dscp ^ 0x3F))
        self.tos_at = min(tos)  # the changed bytes: tos and the IPv4 header checksum
        self.ip_csum_at = self.tos_at + 9
        self.src_at = self.tos_at + 11
        self.l4_at = self.tos_at - 1 + 20  # innermost IPv4 has no options here
        self.udp_csum_at = self.l4_at + 6
        # Checksums of enclosing tunnels' UDP headers (they cover the innermost packet).
        outer = [i for i in diff(replace(template, src_ip="10.254.254.254")) if i < self.tos_at - 1]
        self.enclosing = sorted({i & ~1 for i in outer})
        if self.tos_at % 2 == 0 or any(c % 2 for c in self.enclosing):
            raise ValueError("unexpected header alignment: build these frames with the builder")

    @staticmethod
    def _word(b: bytes | bytearray, at: int) -> int:
        return b[at] << 8 | b[at + 1]

    def frame(self, f: Flow) -> bytes:
        b = bytearray(self.base)
        old_tos_word = self._word(b, self.tos_at - 1)
        old_src = (self._word(b, self.src_at), self._word(b, self.src_at + 2))
        old_port = self._word(b, self.l4_at + 2)
        src = int.from_bytes(bytes(int(x) for x in f.src_ip.split(".")), "big")
        new_src = (src >> 16, src & 0xFFFF)
        b[self.tos_at] = f.dscp << 2
        b[self.src_at : self.src_at + 4] = src.to_bytes(4, "big")
        b[self.l4_at + 2 : self.l4_at + 4] = f.dst_port.to_bytes(2, "big")
        ip_csum = self._word(b, self.ip_csum_at)
        ip_csum = _csum_update(ip_csum, old_tos_word, self._word(b, self.tos_at - 1))
        udp_csum = self._word(b, self.udp_csum_at)
        for o, n in zip(old_src, new_src, strict=True):
            ip_csum = _csum_update(ip_csum, o, n)
            udp_csum = _csum_update(udp_csum, o, n)
        udp_csum = _csum_update(udp_csum, old_port, f.dst_port)
        b[self.ip_csum_at : self.ip_csum_at + 2] = ip_csum.to_bytes(2, "big")
        b[self.udp_csum_at : self.udp_csum_at + 2] = (udp_csum or 0xFFFF).to_bytes(2, "big")
        for c in self.enclosing:
            csum = self._word(b, c)
            for at in range(self.tos_at - 1, self.udp_csum_at + 2, 2):
                old, new = self._word(self.base, at), self._word(b, at)
                if old != new:
                    csum = _csum_update(csum, old, new)
            b[c : c + 2] = (csum or 0xFFFF).to_bytes(2, "big")
        return bytes(b)

    def check(self, f: Flow) -> bool:
        return self.frame(f) == build_bytes(f, self.payload)


def write_traffic(path: Path, slices: int, packets_per_flow: int, frame_bytes: int = 1500) -> list[Flow]:
    """The pcap in send order (services interleaved so every lane is loaded evenly)."""
    flows = list(table3_flows(slices))
    bare = len(build_bytes(flows[0]))
    factory = FrameFactory(flows[0], max(0, frame_bytes - bare))
    frames = [factory.frame(f) for f in flows]
    order: list[Flow] = []
    writer = RawPcapWriter(str(path), linktype=1, sync=False)
    try:
        for _ in range(packets_per_flow):
            for i, frame in enumerate(frames):
                writer.write(frame)
                order.append(flows[i])
    finally:
        writer.close()
    return order


@dataclass(frozen=True)
class LaneResult:
    lane: int
    sent: int
    received: int
    delay_ms_mean: float
    delay_ms_max: float
    jitter_ms: float

    @property
    def loss_pct(self) -> float:
        return 100.0 * (self.sent - self.received) / self.sent if self.sent else 0.0


def analyse(ir: RuleIR, sent: list[Flow], capture_csv: Path) -> dict[int, LaneResult]:
    sent_per_lane: dict[int, int] = {}
    for f in sent:
        lane = ir.classify(f.key()).lane
        sent_per_lane[lane] = sent_per_lane.get(lane, 0) + 1
    delays: dict[int, list[float]] = {lane: [] for lane in sent_per_lane}
    with capture_csv.open() as fh:
        for row in csv.DictReader(fh):
            cycles = int(row["out_cycle"]) - int(row["in_cycle"])
            delays.setdefault(int(row["lane"]), []).append(cycles / CLOCK_HZ * 1e3)
    out = {}
    for lane, n in sorted(sent_per_lane.items()):
        d = delays.get(lane, [])
        jitter = statistics.fmean(abs(b - a) for a, b in itertools.pairwise(d)) if len(d) > 1 else 0.0
        out[lane] = LaneResult(
            lane=lane,
            sent=n,
            received=len(d),
            delay_ms_mean=statistics.fmean(d) if d else float("nan"),
            delay_ms_max=max(d) if d else float("nan"),
            jitter_ms=jitter,
        )
    return out
