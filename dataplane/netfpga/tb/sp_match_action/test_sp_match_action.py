"""sp_match_action: seed 000 Algorithm 1 for every lane / path geometry (including the
degenerate 1-lane and 1-path ones) against ``RuleIR.classify``; DMA -> physical; the
default path for packets without a key; back-pressure through the register stage."""

from __future__ import annotations

import random
from itertools import cycle

import cocotb
import netfpga_tb as ntb
import pytest
from cocotbext.axi import AxiStreamFrame

from sliceportal.rules.ir import Action, FlowKey, Match, Rule, RuleIR, Ternary
from sliceportal_netfpga.tcam import lower_rules, pack_key


class TB:
    def __init__(self, dut: object) -> None:
        self.dut = dut
        self.lanes, self.paths = ntb.param("LANES"), ntb.param("PATHS")
        self.tcam = ntb.RegPort(dut, "tcam")
        ntb.start_clock(dut)
        self.source = ntb.stream_source(dut)
        self.sink = ntb.stream_sink(dut)

    async def reset(self) -> None:
        await ntb.reset(self.dut, "tcam_wr_en", "tcam_rd_en", "cnt_rd_en", "snap", "s_key", "s_key_valid")

    async def install(self, ir: RuleIR) -> None:
        for i, e in enumerate(lower_rules(ir)):
            for w, v in enumerate(e.words()):
                await self.tcam.write(0x10000 + 0x8000 + 0x20 * i + 4 * w, v)
        await self.tcam.write(0x30, len(ir.rules))  # COUNT of bank 1
        await self.tcam.write(0x0, 1)

    async def classify(self, keys: list[FlowKey | None], src_port: int = ntb.NF0) -> list[tuple[int, int, int, int]]:
        """Send one 2-beat packet per key; the key sideband is held for the packet."""
        out = []
        for key in keys:
            frame = AxiStreamFrame(bytes(40), tuser=ntb.tuser(40, src_port))
            if key is None:
                self.dut.s_key_valid.value = 0
            else:
                self.dut.s_key.value = pack_key_of(key)
                self.dut.s_key_valid.value = 1
            await self.source.send(frame)
            await self.source.wait()
            got = await self.sink.recv()
            out.append(ntb.decision(ntb.user_of(got)))
        return out


def pack_key_of(k: FlowKey) -> int:
    from sliceportal_netfpga.tcam import FieldValues

    return pack_key(FieldValues(src_ip=k.src_ip, dst_ip=k.dst_ip, dst_port=k.dst_port, dscp=k.dscp))


def random_key(rng: random.Random) -> FlowKey:
    return FlowKey(
        src_ip=rng.getrandbits(32),
        dst_ip=rng.getrandbits(32),
        dst_port=rng.choice([5000, 5008, 5016, 5024, rng.getrandbits(16)]),
        dscp=rng.getrandbits(6),
    )


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def algorithm1_against_reference(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(4)
    rules = tuple(
        Rule(
            Match(dst_port=Ternary(5000 + 8 * b, 0xFFF8), dscp=Ternary(b << 1, 0b110) if b % 2 else None),
            Action(b + 1, rng.randrange(tb.lanes), rng.randrange(tb.paths)),
        )
        for b in range(4)
    )
    ir = RuleIR(lanes=tb.lanes, paths=tb.paths, rules=rules)
    keys = [random_key(rng) for _ in range(60)]
    # Before install: every packet is a miss (empty table).
    empty = RuleIR(lanes=tb.lanes, paths=tb.paths, rules=())
    got = await tb.classify(keys[:20])
    for k, g in zip(keys[:20], got, strict=True):
        d = empty.classify(k)
        assert g == (ntb.DMA0, d.rr_path, d.lane, 0), k
    await tb.install(ir)
    tb.sink.set_pause_generator(cycle([0, 1, 1, 0]))
    got = await tb.classify(keys)
    for k, g in zip(keys, got, strict=True):
        d = ir.classify(k)
        assert g == (ntb.DMA0, d.rr_path, d.lane, d.slice_id), (k, d)


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def dma_to_phys_and_default_path(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(5)
    assert await tb.classify([random_key(rng)], src_port=ntb.DMA0) == [(ntb.NF0, 0, 0, 0)]
    assert await tb.classify([None]) == [(ntb.DMA0, 0, 0, 0)]


@pytest.mark.parametrize("geometry", [(4, 8), (2, 1), (1, 2), (8, 32)], ids=lambda g: f"{g[0]}lanes-{g[1]}paths")
def test_sp_match_action(cocotb_run, geometry: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    lanes, paths = geometry
    cocotb_run("sp_match_action", __file__, {"LANES": lanes, "PATHS": paths, "ENTRIES": 8})
