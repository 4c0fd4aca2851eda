"""Stateful externs of the program: indirect counters, registers and meters by id."""

from __future__ import annotations

from dataclasses import dataclass, field

from .p4info_index import P4InfoIndex


@dataclass
class MeterCell:
    """A color-blind trTCM (RFC 2698) in bytes, as BMv2's meters; unconfigured = GREEN."""

    cir: int = 0  # bytes/s
    cburst: int = 0  # bytes
    pir: int = 0
    pburst: int = 0
    configured: bool = False
    tc: float = 0.0
    tp: float = 0.0
    last_us: int = -1

    def execute(self, size: int, now_us: int) -> int:
        if not self.configured:
            return 0
        if self.last_us < 0:
            self.tc, self.tp = float(self.cburst), float(self.pburst)
        else:
            dt = max(0, now_us - self.last_us) / 1e6
            self.tc = min(float(self.cburst), self.tc + self.cir * dt)
            self.tp = min(float(self.pburst), self.tp + self.pir * dt)
        self.last_us = now_us
        if self.tp < size:
            return 2  # RED
        if self.tc < size:
            self.tp -= size
            return 1  # YELLOW
        self.tp -= size
        self.tc -= size
        return 0  # GREEN


@dataclass
class ExternState:
    counters: dict[int, list[list[int]]] = field(default_factory=dict)  # id -> [[pkts, bytes]]
    registers: dict[int, list[int]] = field(default_factory=dict)
    register_widths: dict[int, int] = field(default_factory=dict)
    meters: dict[int, list[MeterCell]] = field(default_factory=dict)

    @classmethod
    def of(cls, index: P4InfoIndex) -> ExternState:
        s = cls()
        for cid, c in index.counters.items():
            s.counters[cid] = [[0, 0] for _ in range(c.size)]
        for rid, r in index.registers.items():
            s.registers[rid] = [0] * r.size
            s.register_widths[rid] = r.type_spec.bitstring.bit.bitwidth
        for mid, m in index.meters.items():
            s.meters[mid] = [MeterCell() for _ in range(m.size)]
        return s
