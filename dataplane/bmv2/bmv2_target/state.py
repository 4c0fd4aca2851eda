"""Stateful externs (indirect counters, registers, meters) by P4Info id. Their cells live
in the engine; this maps the controller's ids to the engine's arrays by name, refusing a
P4Info whose externs the device config (p4c's JSON) does not have."""

from __future__ import annotations

from collections.abc import Sequence
from typing import overload

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


class CounterCells(Sequence[tuple[int, int]]):
    """A counter array's (packets, bytes) cells, each read from the engine when asked for:
    a P4Runtime read of a few indices of a large array (slicing.p4's delay histogram has
    65 536 cells) copies those cells, not the whole array each time."""

    def __init__(self, engine: Engine, array: int) -> None:
        self.engine, self.array = engine, array
        self.size: int = engine.counter_size(array)

    def __len__(self) -> int:
        return self.size

    @overload
    def __getitem__(self, i: int) -> tuple[int, int]: ...

    @overload
    def __getitem__(self, i: slice) -> list[tuple[int, int]]: ...

    def __getitem__(self, i: int | slice) -> tuple[int, int] | list[tuple[int, int]]:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(self.size))]
        cell: tuple[int, int] = self.engine.counter_cell(self.array, i)
        return cell


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

    def counter_cells(self, cid: int) -> CounterCells:
        return CounterCells(self.engine, self.counters[cid])

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
