"""sp_tcam: ternary semantics, lowest index wins, entry count, free slots (value bits outside
the mask) never match, shadow-bank writes, bank flip."""

from __future__ import annotations

import random
from dataclasses import dataclass

import cocotb
import netfpga_tb as ntb
import pytest
from cocotb.triggers import ReadOnly, RisingEdge

KEY_W = 86


@dataclass(frozen=True)
class Entry:
    key: int
    mask: int
    action: int

    def words(self) -> list[int]:
        k, m = self.key, self.mask
        return [
            k >> 54,
            (k >> 22) & 0xFFFFFFFF,
            k & 0x3FFFFF,
            m >> 54,
            (m >> 22) & 0xFFFFFFFF,
            m & 0x3FFFFF,
            self.action,
        ]


def entry_addr(bank: int, index: int, word: int) -> int:
    return 0x10000 + 0x8000 * bank + 0x20 * index + 4 * word


class TB:
    def __init__(self, dut: object) -> None:
        self.dut = dut
        self.regs = ntb.RegPort(dut, "reg")
        self.entries = ntb.param("ENTRIES", 64)
        ntb.start_clock(dut)

    async def reset(self) -> None:
        await ntb.reset(self.dut, "reg_wr_en", "reg_rd_en", "lookup_key", after=1)

    async def load(self, bank: int, entries: list[Entry]) -> None:
        for i, e in enumerate(entries):
            for w, v in enumerate(e.words()):
                await self.regs.write(entry_addr(bank, i, w), v)
        await self.regs.write(0x20 + 0x10 * bank, len(entries))

    async def lookup(self, key: int) -> tuple[bool, int, int]:
        self.dut.lookup_key.value = key
        await ReadOnly()
        out = (bool(self.dut.lookup_hit.value), int(self.dut.lookup_index.value), int(self.dut.lookup_action.value))
        await RisingEdge(self.dut.clk)
        return out


def model(entries: list[Entry], key: int) -> tuple[bool, int, int]:
    for i, e in enumerate(entries):
        if key & e.mask == e.key:
            return True, i, e.action
    return False, 0, 0


def random_entry(rng: random.Random) -> Entry:
    # Prefix-like masks per field plus fully random ones, so both shapes are exercised.
    mask = 0
    for lo, width in ((54, 32), (22, 32), (16, 6), (0, 16)):
        kind = rng.random()
        if kind < 0.3:
            m = 0
        elif kind < 0.7:
            n = rng.randint(0, width)
            m = ((1 << n) - 1) << (width - n)
        else:
            m = rng.getrandbits(width)
        mask |= m << lo
    return Entry(rng.getrandbits(KEY_W) & mask, mask, rng.getrandbits(24))


def key_near(rng: random.Random, entries: list[Entry]) -> int:
    """A key that matches some entry's care bits, perturbed now and then."""
    if not entries or rng.random() < 0.2:
        return rng.getrandbits(KEY_W)
    e = rng.choice(entries)
    key = e.key | (rng.getrandbits(KEY_W) & ~e.mask & ((1 << KEY_W) - 1))
    if rng.random() < 0.3:
        key ^= 1 << rng.randrange(KEY_W)
    return key


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def ternary_random_against_model(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(5)
    entries = [random_entry(rng) for _ in range(tb.entries)]
    await tb.load(1, entries)
    await tb.regs.write(0x0, 1)
    for _ in range(400):
        key = key_near(rng, entries)
        assert await tb.lookup(key) == model(entries, key), hex(key)


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def lowest_index_wins_and_count_limits(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    wildcard = Entry(0, 0, 0xAAAAAA)
    exact_key = (0x0A000001 << 54) | (0x0A000002 << 22) | (46 << 16) | 5000
    exact = Entry(exact_key, (1 << KEY_W) - 1, 0x010203)
    await tb.load(1, [exact, wildcard])
    await tb.regs.write(0x0, 1)
    assert await tb.lookup(exact_key) == (True, 0, 0x010203)
    assert await tb.lookup(exact_key ^ 1) == (True, 1, 0xAAAAAA)
    # Entries at index >= COUNT are ignored: shrink the table to the exact entry only.
    await tb.load(0, [exact, wildcard])
    await tb.regs.write(0x20, 1)
    await tb.regs.write(0x0, 0)
    assert await tb.lookup(exact_key ^ 1) == (False, 0, 0)
    assert await tb.lookup(exact_key) == (True, 0, 0x010203)


def free_slot(rng: random.Random) -> Entry:
    """A slot the driver leaves between entries: some value bit where the mask has none.
    The first is the driver's own encoding (tcam.FREE_WORDS: src IP all ones, mask 0)."""
    if rng.random() < 0.3:
        return Entry(((1 << 32) - 1) << 54, 0, 0)
    mask = random_entry(rng).mask
    outside = ~mask & ((1 << KEY_W) - 1)
    stray = 1 << rng.choice([b for b in range(KEY_W) if outside >> b & 1])
    return Entry((rng.getrandbits(KEY_W) & mask) | stray, mask, rng.getrandbits(24))


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def free_slots_never_match_and_entries_around_them_keep_their_slot(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(14)
    # a bank image as the driver lays it out: entries at rising slots, free slots between
    image = [random_entry(rng) if rng.random() < 0.6 else free_slot(rng) for _ in range(tb.entries)]
    image[-1] = free_slot(rng)
    free = [e for e in image if e.key & ~e.mask]
    assert free
    await tb.load(1, image)
    await tb.regs.write(0x0, 1)
    catch_all = Entry(0, 0, 0x0A0B0C)
    for _ in range(300):
        # keys that a free slot's value or care bits would match, and keys near real entries
        f = rng.choice(free)
        key = rng.choice([f.key, f.key & f.mask, key_near(rng, image)])
        got = await tb.lookup(key)
        assert got == model(image, key), hex(key)
        assert not got[0] or not image[got[1]].key & ~image[got[1]].mask
    # a free slot above a catch-all: the catch-all (its slot) answers every key
    await tb.load(0, [free_slot(rng), free_slot(rng), catch_all])
    await tb.regs.write(0x0, 0)
    for f in free[:20]:
        assert await tb.lookup(f.key) == (True, 2, 0x0A0B0C)


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def active_bank_is_write_protected(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    entry = Entry(0, 0, 0x000301)
    await tb.load(1, [entry])
    await tb.regs.write(0x24 + 0x10, 0xDEADBEEF)  # version lo of bank 1
    await tb.regs.write(0x0, 1)
    assert await tb.regs.read(0x0) == 1
    # A write into the active bank is refused and counted; lookups never see it.
    await tb.regs.write(entry_addr(1, 0, 6), 0x0000FF)
    assert await tb.regs.read(0x4) == 1
    assert await tb.lookup(123) == (True, 0, 0x000301)
    assert await tb.regs.read(entry_addr(1, 0, 6)) == 0x000301
    assert await tb.regs.read(0x34) == 0xDEADBEEF
    assert await tb.regs.read(0x30) == 1
    # Read-back returns what was written, field by field.
    other = Entry((0x0A000001 << 54) | 7, ((1 << 32) - 1) << 54 | 0xFFFF, 0x050607)
    await tb.load(0, [other])
    assert [await tb.regs.read(entry_addr(0, 0, w)) for w in range(7)] == other.words()
    # Flipping banks switches the table in one write.
    await tb.regs.write(0x0, 0)
    assert await tb.lookup((0x0A000001 << 54) | 7) == (True, 0, 0x050607)
    assert await tb.lookup(7) == (False, 0, 0)


@pytest.mark.parametrize("entries", [64, 4])
def test_sp_tcam(cocotb_run, entries: int) -> None:  # type: ignore[no-untyped-def]
    cocotb_run("sp_tcam", __file__, {"ENTRIES": entries})
