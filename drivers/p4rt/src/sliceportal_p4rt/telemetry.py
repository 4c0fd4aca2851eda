"""slicing.p4's per slice x lane telemetry (#25), read over P4Runtime: what entered each
slice lane, what left its queue, what was dropped and why, ECN marks, and the queueing
delay the egress measured (``lane_telemetry.p4``: v1model's deq_timedelta, in
microseconds, as a log2 histogram, a sum and a max).

All of it is in counters (BMv2's P4Runtime server answers register reads UNIMPLEMENTED):
the sum and the max come as nibble counts, cell ``j * 16 + v`` counting the packets (for
the max: the rises) whose nibble ``j`` is ``v``, so ``sum = sum(cells[j*16+v] * v << 4j)``.

Cells are indexed ``slice_id * MAX_LANES + lane``. Reads go by index, narrowing step by
step (a wildcard read of the 2 048-cell arrays, let alone the 262 144-cell nibble arrays,
costs seconds in the pure-Python protobuf runtime p4runtime needs): the per-slice counters
the driver reads anyway name the slices that saw traffic; their lanes' counters name the
slice lanes; their histograms bound the highest nibble a sojourn can have; only those
nibbles' cells are read (value 0 adds nothing to a sum and is never read).

The counters' epoch is the pipeline's cookie: the driver sets a random one with every
SetForwardingPipelineConfig, and a restarted switch has none until a driver sets the
pipeline again, so a restart or a reload changes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable, Iterable, Mapping

from p4.v1 import p4runtime_pb2

from sliceportal.drivers.contract import DELAY_BUCKETS, DelayHistogram, LaneCounters

from .p4info import EGR, ING, P4Info

MAX_LANES = 8  # size.p4: the cell of (slice, lane) is slice * MAX_LANES + lane
UNIT_NS = 1000  # deq_timedelta is in microseconds

# name in the P4Info -> what it counts
RX = f"{ING}.classifier.slice_lane_rx"
TX = f"{EGR}.telemetry.slice_lane_tx"
POLICED = f"{ING}.vqueue.slice_lane_drops"
ECN = f"{ING}.vqueue.slice_lane_ecn_marks"
UNROUTED = f"{ING}.fwd.slice_lane_unrouted"
HISTOGRAM = f"{EGR}.telemetry.delay_hist"
SUM_NIBBLES = f"{EGR}.telemetry.delay_sum_nibbles"
MAX_NIBBLES = f"{EGR}.telemetry.delay_max_nibbles"
CELL_COUNTERS = (RX, TX, POLICED, ECN, UNROUTED)
NIBBLE_CELLS = 128  # 8 nibbles x 16 values per slice lane
DELAY_ARRAYS = ((HISTOGRAM, DELAY_BUCKETS), (SUM_NIBBLES, NIBBLE_CELLS), (MAX_NIBBLES, NIBBLE_CELLS))

Cells = dict[int, tuple[int, int]]  # index -> (packets, bytes)


def bucket_of(sojourn: int) -> int:
    """The histogram bucket lane_telemetry.p4 counts a sojourn in: its highest set bit
    (0 and 1 both in bucket 0), capped at the last bucket."""
    return min(max(sojourn.bit_length() - 1, 0), DELAY_BUCKETS - 1)


def new_cookie() -> int:
    """A pipeline cookie for SetForwardingPipelineConfig: the counters' epoch from then on."""
    return secrets.randbits(63) | 1  # never 0, which a switch reports when nobody set one


def cell_of(slice_id: int, lane: int) -> int:
    return slice_id * MAX_LANES + lane


def nibble_total(cells: list[int]) -> int:
    """The value the nibble counts of one slice lane add up to (see the module docstring)."""
    return sum(n * (i % 16) << (4 * (i // 16)) for i, n in enumerate(cells))


def _entries(p4info: P4Info, name: str, indices: Iterable[int]) -> list[p4runtime_pb2.Entity]:
    cid = p4info.counter_id(name)
    out = []
    for i in indices:
        e = p4runtime_pb2.Entity()
        e.counter_entry.counter_id = cid
        e.counter_entry.index.index = i
        out.append(e)
    return out


def cell_reads(p4info: P4Info, slices: Iterable[int], lanes: int) -> list[p4runtime_pb2.Entity]:
    """Every per-cell counter of each lane of ``slices``."""
    cells = [cell_of(s, lane) for s in slices for lane in range(lanes)]
    return [e for name in CELL_COUNTERS for e in _entries(p4info, name, cells)]


def histogram_reads(p4info: P4Info, cells: Iterable[int]) -> list[p4runtime_pb2.Entity]:
    return _entries(p4info, HISTOGRAM, (c * DELAY_BUCKETS + b for c in cells for b in range(DELAY_BUCKETS)))


def nibble_reads(p4info: P4Info, nibbles: Mapping[int, int]) -> list[p4runtime_pb2.Entity]:
    """The sum's and the max's nibble cells of values 1-15 at positions below
    ``nibbles[cell]`` for each cell."""
    indices = [c * NIBBLE_CELLS + j * 16 + v for c, n in nibbles.items() for j in range(n) for v in range(1, 16)]
    return _entries(p4info, SUM_NIBBLES, indices) + _entries(p4info, MAX_NIBBLES, indices)


def nibbles_needed(buckets: list[int]) -> int:
    """How many low nibbles the largest sojourn a histogram counted can have."""
    used = [b for b, n in enumerate(buckets) if n]
    return used[-1] // 4 + 1 if used else 0


def counter_cells(p4info: P4Info, got: Iterable[p4runtime_pb2.Entity]) -> dict[str, Cells]:
    """{counter name: {index: (packets, bytes)}} of every counter's answers among ``got``."""
    names = {p4info.counter_id(name): name for name in (*CELL_COUNTERS, *(n for n, _ in DELAY_ARRAYS))}
    out: dict[str, Cells] = {name: {} for name in names.values()}
    for ent in got:
        c = ent.counter_entry
        if ent.HasField("counter_entry") and c.counter_id in names:
            out[names[c.counter_id]][c.index.index] = (c.data.packet_count, c.data.byte_count)
    return out


def per_cell(cells: Cells, width: int) -> dict[int, list[int]]:
    """A delay array's packet counts grouped by slice lane: {cell: [width counts]}."""
    out: dict[int, list[int]] = {}
    for i, (packets, _) in cells.items():
        out.setdefault(i // width, [0] * width)[i % width] = packets
    return out


def active_cells(counters: Mapping[str, Cells], lanes: int) -> list[int]:
    """Cells of a lane the switch has where a packet entered, left or was dropped."""
    seen: set[int] = set()
    for name in (RX, TX, POLICED, UNROUTED):
        seen.update(i for i, (pk, _) in counters[name].items() if pk and i % MAX_LANES < lanes)
    return sorted(seen)


def slice_lanes(
    counters: Mapping[str, Cells],
    delays: Mapping[str, Cells],
    cells: Iterable[int],
    policer_reason: str,
) -> dict[str, LaneCounters]:
    """Counters.slice_lanes ("slice_id/lane") for ``cells``. Slice 0 holds what the
    classifier missed (its lane from the miss policy). The histogram's count is the sum of
    its buckets: every packet that left counted once, in one bucket."""
    hist = per_cell(delays.get(HISTOGRAM, {}), DELAY_BUCKETS)
    sums = per_cell(delays.get(SUM_NIBBLES, {}), NIBBLE_CELLS)
    rises = per_cell(delays.get(MAX_NIBBLES, {}), NIBBLE_CELLS)
    out: dict[str, LaneCounters] = {}
    for cell in cells:
        rx = counters[RX].get(cell, (0, 0))
        tx = counters[TX].get(cell, (0, 0))
        drops = {
            reason: n
            for reason, n in (
                (policer_reason, counters[POLICED].get(cell, (0, 0))[0]),
                ("no_route", counters[UNROUTED].get(cell, (0, 0))[0]),
            )
            if n
        }
        buckets = hist.get(cell, [0] * DELAY_BUCKETS)
        delay = DelayHistogram(
            unit_ns=UNIT_NS,
            count=sum(buckets),
            sum=nibble_total(sums.get(cell, [])),
            max=nibble_total(rises.get(cell, [])),
            buckets=tuple(buckets),
        )
        out[f"{cell // MAX_LANES}/{cell % MAX_LANES}"] = LaneCounters(
            packets=rx[0],
            bytes=rx[1],
            drops=drops,
            ecn_marks=counters[ECN].get(cell, (0, 0))[0],
            tx_packets=tx[0],
            tx_bytes=tx[1],
            delay=delay,
        )
    return out


def read_slice_lanes(
    read: Callable[[list[p4runtime_pb2.Entity]], list[p4runtime_pb2.Entity]],
    p4info: P4Info,
    slices: Iterable[int],
    lanes: int,
    policer_reason: str,
) -> dict[str, LaneCounters]:
    """Counters.slice_lanes of ``slices`` (those the per-slice counters saw traffic in) in at
    most three Reads: their lanes' counters, the active lanes' histograms, the nibbles the
    histograms say can be set."""
    slices = list(slices)
    if not slices:
        return {}
    counters = counter_cells(p4info, read(cell_reads(p4info, slices, lanes)))
    active = active_cells(counters, lanes)
    leaving = [c for c in active if counters[TX].get(c, (0, 0))[0]]
    if not leaving:
        return slice_lanes(counters, {}, active, policer_reason)
    delays = counter_cells(p4info, read(histogram_reads(p4info, leaving)))
    nibbles = {c: n for c, b in per_cell(delays[HISTOGRAM], DELAY_BUCKETS).items() if (n := nibbles_needed(b))}
    if nibbles:
        more = counter_cells(p4info, read(nibble_reads(p4info, nibbles)))
        delays[SUM_NIBBLES], delays[MAX_NIBBLES] = more[SUM_NIBBLES], more[MAX_NIBBLES]
    return slice_lanes(counters, delays, active, policer_reason)
