"""sp_slice_stats: per slice x lane counters and the queueing-delay histogram against
hand-computed values; the snapshot semantics (a read-out is the state at the SNAPSHOT,
also when an update lands in the same cycle); untracked slice ids; monotonic counters."""

from __future__ import annotations

import random

import cocotb
import netfpga_tb as ntb
import pytest
from cocotb.triggers import RisingEdge

from sliceportal_netfpga import regmap


def bucket(sojourn: int) -> int:
    """The contract's log2 bucket: [2**b, 2**(b+1)), 0 counted in bucket 0."""
    return max(sojourn.bit_length() - 1, 0)


class TB:
    def __init__(self, dut: object) -> None:
        self.dut = dut
        self.slices = ntb.param("SLICES", 64)
        self.lanes = ntb.param("LANES", 4)
        self.cnt = ntb.RegPort(dut, "cnt")
        ntb.start_clock(dut)

    async def reset(self) -> None:
        events = ("snap", "enq_ok", "enq_full", "rl_drop", "deq")
        await ntb.reset(self.dut, *events, "cnt_rd_en", "enq_user", "rl_user", "deq_user", "deq_sojourn", "cnt_rd_addr")

    async def event(self, **kw: int) -> None:
        """One cycle with the given inputs set (the rest idle)."""
        d = self.dut
        for name, value in kw.items():
            getattr(d, name).value = value
        await RisingEdge(d.clk)
        for name in ("snap", "enq_ok", "enq_full", "rl_drop", "deq"):
            getattr(d, name).value = 0

    async def dequeue(self, slice_id: int, lane: int, length: int, sojourn: int, **kw: int) -> None:
        await self.event(deq=1, deq_user=ntb.tuser(length, slice_id=slice_id, lane=lane), deq_sojourn=sojourn, **kw)

    async def snapshot(self) -> None:
        await self.event(snap=1)

    async def read64(self, addr: int) -> int:
        """A 64-bit value at its datapath address (regmap), through the block's window."""
        return await self.cnt.read64((addr - regmap.STATS) & 0x1FFFF)

    async def entry(self, slice_id: int, lane: int) -> dict[str, int]:
        return await ntb.stats_entry(self.read64, slice_id, lane, self.lanes)


def histogram(sojourns: list[int]) -> dict[str, int]:
    h = {f"b{b}": 0 for b in range(regmap.DELAY_BUCKETS)}
    for s in sojourns:
        h[f"b{bucket(s)}"] += 1
    return h


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def delay_histogram_of_hand_picked_sojourns(dut: object) -> None:
    """Bucket edges (0, 1, 2, 3, 4, 7, 8, 2**31 - 1, 2**31, 2**32 - 1) land where the
    contract says, sum and max are exact, the count is TX_PACKETS, the bytes add up, and
    another slice / lane sees nothing."""
    tb = TB(dut)
    await tb.reset()
    sojourns = [0, 1, 2, 3, 4, 7, 8, 100, 2**31 - 1, 2**31, 2**32 - 1, 5]
    lane = tb.lanes - 1
    for i, s in enumerate(sojourns):
        await tb.dequeue(3, lane, 64 + i, s)
    await tb.snapshot()
    got = await tb.entry(3, lane)
    assert got["tx_packets"] == len(sojourns)
    assert got["tx_bytes"] == sum(64 + i for i in range(len(sojourns)))
    assert got["delay_sum"] == sum(sojourns)
    assert got["delay_max"] == 2**32 - 1
    assert {k: v for k, v in got.items() if k.startswith("b")} == histogram(sojourns)
    # hand-checked against the contract's definition, not only against bucket()
    assert (got["b0"], got["b1"], got["b2"], got["b3"], got["b6"], got["b30"], got["b31"]) == (2, 2, 3, 1, 1, 1, 2)
    for f in ("enq_packets", "queue_drop_packets", "rate_drop_packets"):
        assert got[f] == 0
    other = await tb.entry(3, 0) if tb.lanes > 1 else await tb.entry(2, lane)
    assert all(v == 0 for v in other.values())


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def ingress_and_rate_drops_per_slice_and_lane(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    lane = 1 % tb.lanes
    for length in (100, 200, 300):
        await tb.event(enq_ok=1, enq_user=ntb.tuser(length, slice_id=1, lane=lane))
    await tb.event(enq_full=1, enq_user=ntb.tuser(1500, slice_id=1, lane=lane))
    # both in one cycle, different entries (different sources)
    rl_user, enq_user = ntb.tuser(60, slice_id=1, lane=lane), ntb.tuser(70, slice_id=2)
    await tb.event(rl_drop=1, rl_user=rl_user, enq_ok=1, enq_user=enq_user)
    # lane bits above LANES fold like the queue's; a slice id >= SLICES is not counted
    await tb.event(enq_ok=1, enq_user=ntb.tuser(80, slice_id=2, lane=tb.lanes))
    if tb.slices < 256:
        await tb.event(enq_ok=1, enq_user=ntb.tuser(90, slice_id=tb.slices, lane=0))
    await tb.snapshot()
    one = await tb.entry(1, lane)
    assert (one["enq_packets"], one["enq_bytes"]) == (3, 600)
    assert (one["queue_drop_packets"], one["queue_drop_bytes"]) == (1, 1500)
    assert (one["rate_drop_packets"], one["rate_drop_bytes"]) == (1, 60)
    assert one["tx_packets"] == 0
    two = await tb.entry(2, 0)
    assert (two["enq_packets"], two["enq_bytes"]) == (2, 150)
    zero = await tb.entry(0, 0)
    assert zero["enq_packets"] == 0


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def a_read_out_is_the_state_at_the_snapshot(dut: object) -> None:
    """Updates after SNAPSHOT stay invisible until the next one; an update in the snapshot's
    own cycle is after it; a value untouched since the snapshot reads from the live memory."""
    tb = TB(dut)
    await tb.reset()
    await tb.dequeue(5, 0, 100, 10)
    await tb.snapshot()
    await tb.dequeue(5, 0, 100, 1000)  # after the snapshot: not in this read-out
    five = await tb.entry(5, 0)
    assert (five["tx_packets"], five["delay_sum"], five["delay_max"], five["b3"], five["b9"]) == (1, 10, 10, 1, 0)
    await tb.dequeue(6, 0, 100, 3, snap=1)  # a snapshot in this update's cycle: before it
    five = await tb.entry(5, 0)
    assert (five["tx_packets"], five["delay_sum"], five["delay_max"], five["b3"], five["b9"]) == (2, 1010, 1000, 1, 1)
    six = await tb.entry(6, 0)
    assert six["tx_packets"] == 0 and six["b1"] == 0
    await tb.snapshot()
    six = await tb.entry(6, 0)
    assert (six["tx_packets"], six["delay_sum"], six["b1"]) == (1, 3, 1)


@cocotb.test(timeout_time=2, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def random_events_match_a_model_and_never_decrease(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    rng = random.Random(25)
    keys = [(s, lane) for s in (1, 2, tb.slices - 1) for lane in range(min(tb.lanes, 2))]
    model = {k: {"tx_packets": 0, "tx_bytes": 0, "delay_sum": 0, "delay_max": 0, **histogram([])} for k in keys}
    last: dict[tuple[int, int], dict[str, int]] = {}
    for _ in range(4):
        for _ in range(60):
            k = rng.choice(keys)
            s = rng.choice([rng.randrange(4), rng.randrange(1 << rng.randrange(1, 32))])
            length = rng.randrange(60, 1519)
            m = model[k]
            m["tx_packets"] += 1
            m["tx_bytes"] += length
            m["delay_sum"] += s
            m["delay_max"] = max(m["delay_max"], s)
            m[f"b{bucket(s)}"] += 1
            await tb.dequeue(*k, length, s)
        await tb.snapshot()
        for k in keys:
            got = await tb.entry(*k)
            assert {f: got[f] for f in model[k]} == model[k], k
            assert all(got[f] >= last.get(k, got)[f] for f in got), k
            last[k] = got


# The production table (32 slices x 8 lanes) runs in tb/sp_datapath's production geometry.
@pytest.mark.parametrize("geometry", [(64, 4)], ids=["prototype-64x4"])
def test_sp_slice_stats(cocotb_run, geometry: tuple[int, int]) -> None:  # type: ignore[no-untyped-def]
    slices, lanes = geometry
    cocotb_run("sp_slice_stats", __file__, {"SLICES": slices, "LANES": lanes})
