"""What the cocotb testbenches of dataplane/netfpga share: the parameters a test was built
with, the clock, reset, AXI4-Stream endpoints, the tuser layout of rtl/sp_defs.vh, and the
register ports (a block's simple register bus, the top level's AXI4-Lite).

Not a test module (conftest.py puts this folder on sys.path for the testbenches).
"""

from __future__ import annotations

import ast
import os
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any

import cocotb
from cocotb.clock import Clock
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiLiteBus, AxiLiteMaster, AxiStreamBus, AxiStreamFrame, AxiStreamSink, AxiStreamSource

from sliceportal_netfpga import regmap

CLOCK_NS = 5  # 200 MHz, NetFPGA SUME's core clock

# Source / destination port bits (one-hot): nf0 = 0x01, dma0 = 0x02, nf1 = 0x04 ...
NF0, DMA0 = 0x01, 0x02


def param(name: str, default: int | None = None) -> int:
    """A parameter of the simulation conftest's ``cocotb_run`` built (``SP_PARAMS``); the
    RTL's default when the test did not set it."""
    params = ast.literal_eval(os.environ.get("SP_PARAMS", "{}"))
    value = params.get(name, default)
    if value is None:
        raise KeyError(f"{name} is not among the test's parameters {params}")
    return int(value)


def start_clock(dut: Any) -> None:
    cocotb.start_soon(Clock(dut.clk, CLOCK_NS, unit="ns").start())


async def reset(dut: Any, *idle: str, after: int = 2) -> None:
    """Inputs ``idle`` to 0 and ``rst`` high for three cycles, then ``after`` cycles out of reset."""
    for name in idle:
        getattr(dut, name).value = 0
    dut.rst.value = 1
    await ClockCycles(dut.clk, 3)
    dut.rst.value = 0
    await ClockCycles(dut.clk, after)


async def pulse(dut: Any, name: str) -> None:
    """Input ``name`` high for one cycle (e.g. ``snap``)."""
    getattr(dut, name).value = 1
    await RisingEdge(dut.clk)
    getattr(dut, name).value = 0


def stream_source(dut: Any, prefix: str = "s_axis") -> AxiStreamSource:
    return AxiStreamSource(AxiStreamBus.from_prefix(dut, prefix), dut.clk, dut.rst)


def stream_sink(dut: Any, prefix: str = "m_axis") -> AxiStreamSink:
    return AxiStreamSink(AxiStreamBus.from_prefix(dut, prefix), dut.clk, dut.rst)


# ---- tuser (rtl/sp_defs.vh) ---------------------------------------------------------------


def tuser(length: int, src: int = 0, dst: int = 0, rr_path: int = 0, lane: int = 0, slice_id: int = 0) -> int:
    return length | src << 16 | dst << 24 | rr_path << 32 | lane << 40 | slice_id << 48


def user_of(frame: AxiStreamFrame) -> int:
    """A received frame's tuser (the first beat's, as SUME consumers read it)."""
    return int(frame.tuser[0] if isinstance(frame.tuser, list) else frame.tuser)


def decision(user: int) -> tuple[int, int, int, int]:
    """(dst port, rr_path, lane, slice id) from a tuser value."""
    return (user >> 24) & 0xFF, (user >> 32) & 0xFF, (user >> 40) & 0xFF, (user >> 48) & 0xFF


# ---- register ports -----------------------------------------------------------------------


class Registers(ABC):
    """32-bit registers; 64-bit values are two words, the low one first."""

    @abstractmethod
    async def read(self, addr: int) -> int:
        """The 32-bit register at ``addr``."""

    async def read64(self, addr: int) -> int:
        lo = await self.read(addr)
        return lo | await self.read(addr + 4) << 32


class RegPort(Registers):
    """A block's register bus ``<prefix>_wr_en / _wr_addr / _wr_data`` and ``<prefix>_rd_en /
    _rd_addr / _rd_data``: one access per cycle, a read answers one cycle later."""

    def __init__(self, dut: Any, prefix: str) -> None:
        self.dut = dut
        self.prefix = prefix

    def _sig(self, name: str) -> Any:
        return getattr(self.dut, f"{self.prefix}_{name}")

    async def write(self, addr: int, value: int) -> None:
        self._sig("wr_en").value = 1
        self._sig("wr_addr").value = addr
        self._sig("wr_data").value = value
        await RisingEdge(self.dut.clk)
        self._sig("wr_en").value = 0

    async def read(self, addr: int) -> int:
        self._sig("rd_en").value = 1
        self._sig("rd_addr").value = addr
        await RisingEdge(self.dut.clk)
        self._sig("rd_en").value = 0
        await ReadOnly()
        value = int(self._sig("rd_data").value)
        await RisingEdge(self.dut.clk)
        return value


class AxiLitePort(Registers):
    """The top level's AXI4-Lite register port, as the driver reaches it."""

    def __init__(self, dut: Any, prefix: str = "s_axil") -> None:
        self.master = AxiLiteMaster(AxiLiteBus.from_prefix(dut, prefix), dut.clk, dut.rst)

    async def write(self, addr: int, value: int) -> None:
        await self.master.write_dword(addr, value)

    async def read(self, addr: int) -> int:
        return int(await self.master.read_dword(addr))


async def stats_entry(read64: Callable[[int], Awaitable[int]], slice_id: int, lane: int, lanes: int) -> dict[str, int]:
    """One slice x lane entry of the telemetry window by its regmap addresses: every field
    of regmap.STATS_FIELDS and the delay buckets as ``b0`` .. ``b31``."""
    out = {f: await read64(regmap.stats_field(slice_id, lane, lanes, f)) for f in regmap.STATS_FIELDS}
    for b in range(regmap.DELAY_BUCKETS):
        out[f"b{b}"] = await read64(regmap.stats_bucket(slice_id, lane, lanes, b))
    return out
