"""sp_rate_limiter against a Python reference model of the same token bucket.

The model (``Bucket`` / ``Model``) is the arithmetic the RTL header documents, in integers:
Q8.24 rate, Q32.24 tokens, lazy refill on a packet's first beat with the elapsed cycles
saturated at 2^32 - 1. A monitor samples the ports on every rising edge (the values the
flip-flops see) and feeds the model each packet's first beat and each register write in
clock order, so the model's verdicts are exact; the test then compares the frames that
leave and the drop counters with the model's. Traffic: random sizes and gaps, several
slices at different rates, sink back-pressure, reconfiguration while traffic flows,
rate 0, disabled buckets, slice 0, the burst edge, elapsed-time saturation, and
back-to-back minimum frames at one beat per cycle.
"""

from __future__ import annotations

import logging
import random
from dataclasses import dataclass, field
from itertools import cycle

import cocotb
import netfpga_tb as ntb
import pytest
from cocotb.triggers import ClockCycles, RisingEdge
from cocotbext.axi import AxiStreamFrame

from sliceportal_netfpga import regmap

FIELD_OF = {off: name for name, off in regmap.RATE_FIELDS.items()}
SAT = (1 << 32) - 1


@dataclass
class Bucket:
    rate: int = 0
    burst: int = 0
    enable: bool = False
    tokens: int = 0
    last: int = 0
    drops: int = 0
    drop_bytes: int = 0


@dataclass
class Model:
    slices: int
    frac: int
    buckets: list[Bucket] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.buckets = [Bucket() for _ in range(self.slices)]

    def packet(self, now: int, slice_id: int, length: int) -> bool:
        """True when the packet passes; updates the bucket as the RTL does."""
        if slice_id == 0 or slice_id >= self.slices or not self.buckets[slice_id].enable:
            return True
        b = self.buckets[slice_id]
        elapsed = min((now - b.last) % (1 << 64), SAT)
        filled = min(b.burst << self.frac, b.tokens + elapsed * b.rate)
        need = length << self.frac
        ok = filled >= need
        b.tokens = filled - need if ok else filled
        b.last = now
        if not ok:
            b.drops += 1
            b.drop_bytes += length
        return ok

    def write(self, now: int, addr: int, value: int) -> None:
        if addr & 0x8000 or addr >> 5 >= self.slices:
            return
        b = self.buckets[addr >> 5]
        name = FIELD_OF.get(addr & 0x1F)
        if name == "rate":
            b.rate = value
        elif name == "burst":
            b.burst = value
        elif name == "enable":
            if value & 1 and not b.enable:
                b.tokens = b.burst << self.frac
                b.last = now
            b.enable = bool(value & 1)


def rate_q(bytes_per_cycle: float, frac: int = 24) -> int:
    return round(bytes_per_cycle * (1 << frac))


def frame(slice_id: int, length: int, seq: int) -> AxiStreamFrame:
    data = seq.to_bytes(4, "big") + bytes([slice_id]) + bytes(length - 5)
    return AxiStreamFrame(data, tuser=ntb.tuser(length, ntb.NF0, ntb.DMA0, slice_id=slice_id))


class TB:
    def __init__(self, dut: object) -> None:
        self.dut = dut
        self.slices = ntb.param("SLICES", 64)
        self.model = Model(self.slices, 24)
        self.now = 0
        self.sent: list[AxiStreamFrame] = []
        self.expected: list[bytes] = []  # frames the model lets through, in order
        self.first = True
        self.fires = 0
        self.stalls = 0
        self.cfg = ntb.RegPort(dut, "cfg")
        ntb.start_clock(dut)
        self.source = ntb.stream_source(dut)
        self.sink = ntb.stream_sink(dut)
        self.source.log.setLevel(logging.WARNING)  # one line per frame drowns a failure
        self.sink.log.setLevel(logging.WARNING)

    async def reset(self) -> None:
        idle = ("snap", "cfg_wr_en", "cfg_rd_en", "cfg_wr_addr", "cfg_wr_data", "cfg_rd_addr", "now")
        await ntb.reset(self.dut, *idle, after=1)
        cocotb.start_soon(self._monitor())

    async def _monitor(self) -> None:
        """Clock the cycle counter and feed the model, edge by edge."""
        d = self.dut
        packets = 0
        while True:
            await RisingEdge(d.clk)
            now = self.now
            if int(d.s_axis_tvalid.value):
                if int(d.s_axis_tready.value):
                    self.fires += 1
                    if self.first:
                        user = int(d.s_axis_tuser.value)
                        f = self.sent[packets]
                        packets += 1
                        assert (user >> 48) & 0xFF == f.tdata[4]
                        if self.model.packet(now, (user >> 48) & 0xFF, user & 0xFFFF):
                            self.expected.append(bytes(f.tdata))
                    self.first = bool(int(d.s_axis_tlast.value))
                else:
                    self.stalls += 1
            if int(d.cfg_wr_en.value):
                self.model.write(now, int(d.cfg_wr_addr.value), int(d.cfg_wr_data.value))
            self.now = now + 1
            d.now.value = self.now

    def jump(self, cycles: int) -> None:
        """Move the cycle counter forward (an idle period without simulating it)."""
        self.now += cycles
        self.dut.now.value = self.now

    async def configure(self, slice_id: int, rate: int, burst: int, enable: int = 1) -> None:
        base = regmap.RATE_STRIDE * slice_id
        await self.cfg.write(base + regmap.RATE_FIELDS["rate"], rate)
        await self.cfg.write(base + regmap.RATE_FIELDS["burst"], burst)
        await self.cfg.write(base + regmap.RATE_FIELDS["enable"], enable)

    async def send(self, slice_id: int, length: int) -> None:
        f = frame(slice_id, length, len(self.sent))
        self.sent.append(f)
        await self.source.send(f)

    async def flush(self) -> None:
        """Until every queued frame has entered the stage (``send`` only queues)."""
        await self.source.wait()
        await ClockCycles(self.dut.clk, 4)

    async def drain_and_check(self) -> None:
        """Wait until every sent frame has passed the stage, then compare with the model."""
        await self.source.wait()
        await ClockCycles(self.dut.clk, 20)
        got = []
        while not self.sink.empty():
            got.append(bytes(self.sink.recv_nowait().tdata))
        assert len(got) == len(self.expected), (len(got), len(self.expected))
        assert got == self.expected
        await ntb.pulse(self.dut, "snap")
        await RisingEdge(self.dut.clk)
        for s in sorted({*range(min(self.slices, 8)), self.slices - 1}):
            base = regmap.RATE_STRIDE * s
            pkts = await self.cfg.read64(base + 0x10)
            nbytes = await self.cfg.read64(base + 0x18)
            b = self.model.buckets[s]
            assert (pkts, nbytes) == (b.drops, b.drop_bytes), (s, pkts, nbytes, b)
            if b.enable:
                assert await self.cfg.read(base + regmap.RATE_FIELDS["tokens"]) == b.tokens >> 24, s


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def random_traffic_matches_model(dut: object) -> None:
    """Several slices at different rates and bursts, random sizes and gaps, back-pressure."""
    tb = TB(dut)
    await tb.reset()
    assert await tb.cfg.read(0x8000) == tb.slices and await tb.cfg.read(0x8004) == 24
    rng = random.Random(7)
    active = [s for s in (1, 2, 3, 5) if s < tb.slices]
    for i, s in enumerate(active):
        await tb.configure(s, rate_q([0.9, 0.3, 2.5, 0.05][i]), [1600, 3000, 9000, 200][i])
    tb.sink.set_pause_generator(cycle([0] * 7 + [1]))  # a short stall every 8 cycles
    for _ in range(400):
        await tb.send(rng.choice([0, 4, *active]), rng.randrange(40, 1500))
        if rng.random() < 0.3:
            await ClockCycles(dut.clk, rng.randrange(1, 200))
    await tb.drain_and_check()
    assert sum(b.drops for b in tb.model.buckets) > 20  # the limits did bite
    assert len(tb.expected) > 150  # and conforming traffic passed


@cocotb.test(timeout_time=20, timeout_unit="ms")
async def reconfiguration_under_traffic(dut: object) -> None:
    """Rate, burst and enable rewritten at random moments while three slices send."""
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(21)
    slices = [1, 2, 3]
    for s in slices:
        await tb.configure(s, rate_q(0.5), 2000)

    async def reconfigure() -> None:
        for _ in range(60):
            await ClockCycles(dut.clk, rng.randrange(5, 80))
            s = rng.choice(slices)
            base = regmap.RATE_STRIDE * s
            what = rng.randrange(3)
            if what == 0:
                await tb.cfg.write(base, rate_q(rng.choice([0.0, 0.1, 0.5, 3.0])))
            elif what == 1:
                await tb.cfg.write(base + 4, rng.choice([0, 64, 500, 2000, 20000]))
            else:
                await tb.cfg.write(base + 8, rng.randrange(2))

    task = cocotb.start_soon(reconfigure())
    for _ in range(500):
        await tb.send(rng.choice(slices), rng.randrange(60, 600))
        if rng.random() < 0.2:
            await ClockCycles(dut.clk, rng.randrange(1, 40))
    await task
    await tb.drain_and_check()


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def edges_rate0_disabled_slice0_and_saturation(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    # Burst edge with rate 0: exactly the bucket passes, one byte more does not.
    await tb.configure(1, 0, 1064)
    await tb.send(1, 1000)
    await tb.send(1, 64)  # tokens now exactly 0
    await tb.send(1, 64)  # dropped
    await tb.send(1, 40)  # dropped: rate 0 never refills
    # Enabled with burst 0: everything dropped. Slice 0 with a bucket: never limited.
    await tb.configure(2, rate_q(1.0), 0)
    await tb.send(2, 64)
    await tb.configure(0, 0, 0)
    await tb.send(0, 1500)
    # Disabled bucket: passes whatever its rate.
    await tb.configure(3, 0, 0, enable=0)
    await tb.send(3, 1500)
    await tb.flush()
    # Re-enabling starts the bucket full again.
    await tb.cfg.write(regmap.RATE_STRIDE * 1 + 8, 0)
    await tb.cfg.write(regmap.RATE_STRIDE * 1 + 8, 1)
    await tb.send(1, 1064)
    # Elapsed time saturates at 2^32 - 1 cycles: an idle of 2^33 cycles credits 2^32 - 1.
    await tb.configure(4, 1, 1 << 20)  # 2^-24 B/cycle, 1 MiB burst
    await tb.send(4, 1 << 15)  # 32 KiB of the 1 MiB pass
    await tb.flush()
    tb.jump(1 << 33)
    await ClockCycles(dut.clk, 2)
    await tb.send(4, 1 << 15)
    await tb.drain_and_check()
    got = [e[4] for e in tb.expected]
    assert got == [1, 1, 0, 3, 1, 4, 4], got
    b = tb.model.buckets[4]
    assert b.tokens == ((1 << 20) << 24) - (2 << 39) + SAT  # the saturated credit


@cocotb.test(timeout_time=5, timeout_unit="ms")
async def back_to_back_minimum_frames_one_beat_per_cycle(dut: object) -> None:
    """64-byte frames with no gap, half of them over the limit: the stage never stalls the
    source (every beat accepted the cycle it is offered) and drops exactly the excess."""
    tb = TB(dut)
    await tb.reset()
    await tb.configure(1, rate_q(16.0), 640)  # a quarter of the 64 B/cycle... offered 32 B/cycle
    await tb.configure(2, rate_q(64.0), 64)  # at least the offered rate: nothing dropped
    for i in range(300):
        await tb.send(1 + i % 2, 64)
    await tb.drain_and_check()
    assert tb.stalls == 0 and tb.fires == 600, (tb.stalls, tb.fires)
    assert tb.model.buckets[2].drops == 0
    # Slice 1 is offered 64 B every 4 cycles = 16 B/cycle, exactly its rate: after the
    # bucket's start it only ever passes; slice 1 drops nothing either.
    assert tb.model.buckets[1].drops == 0


@pytest.mark.parametrize("slices", [8, 64])
def test_sp_rate_limiter(cocotb_run, slices: int) -> None:  # type: ignore[no-untyped-def]
    cocotb_run("sp_rate_limiter", __file__, {"SLICES": slices})
