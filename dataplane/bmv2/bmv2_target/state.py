"""Stateful externs (indirect counters, registers, meters) by P4Info id. Their cells live
in the engine; this maps the controller's ids to the engine's arrays by name, refusing a
P4Info whose externs the device config (p4c's JSON) does not have."""

from __future__ import annotations

import grpc

from .engine import Engine
from .errors import P4RTError
from .p4info_index import P4InfoIndex


def _resolve(kind: str, name: str, found: int | None) -> int:
    if found is None:
        raise P4RTError(
            grpc.StatusCode.INVALID_ARGUMENT, f"the P4Info's {kind} {name} is not in the device config (p4c's JSON)"
        )
    return found


class Externs:
    def __init__(self, index: P4InfoIndex, engine: Engine) -> None:
        self.engine = engine
        self.counters = {
            cid: _resolve("counter", c.preamble.name, engine.counter_index(c.preamble.name))
            for cid, c in index.counters.items()
        }
        self.registers = {
            rid: _resolve("register", r.preamble.name, engine.register_index(r.preamble.name))
            for rid, r in index.registers.items()
        }
        self.meters = {
            mid: _resolve("meter", m.preamble.name, engine.meter_index(m.preamble.name))
            for mid, m in index.meters.items()
        }

    def counter_cells(self, cid: int) -> list[tuple[int, int]]:
        cells: list[tuple[int, int]] = self.engine.counter_cells(self.counters[cid])
        return cells

    def set_counter(self, cid: int, i: int, packets: int, bytes_: int) -> None:
        self.engine.set_counter(self.counters[cid], i, packets, bytes_)

    def register_cells(self, rid: int) -> list[int]:
        cells: list[int] = self.engine.register_cells(self.registers[rid])
        return cells

    def meter_size(self, mid: int) -> int:
        n: int = self.engine.meter_size(self.meters[mid])
        return n

    def meter_config(self, mid: int, i: int) -> tuple[int, int, int, int] | None:
        cfg: tuple[int, int, int, int] | None = self.engine.meter_config(self.meters[mid], i)
        return cfg

    def set_meter(self, mid: int, i: int, config: tuple[int, int, int, int] | None) -> None:
        self.engine.set_meter(self.meters[mid], i, config)
