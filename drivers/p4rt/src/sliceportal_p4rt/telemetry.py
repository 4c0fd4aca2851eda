"""slicing.p4's per slice x lane telemetry (#25), read over P4Runtime: what entered each
slice lane, what left its queue, what was dropped and why, ECN marks, and the queueing
delay the egress measured (``lane_telemetry.p4``: v1model's deq_timedelta, in
microseconds, as a log2 histogram, a sum and a max).

All of it is in counters (BMv2's P4Runtime server answers register reads UNIMPLEMENTED):
the sum and the max come as nibble counts, cell ``j * 16 + v`` counting the packets (for
the max: the rises) whose nibble ``j`` is ``v``, so ``sum = sum(cells[j*16+v] * v << 4j)``.

Cells are indexed ``slice_id * MAX_LANES + lane``. The per-cell counters (2 048 cells
each) come in one Read with the driver's other counters; the delay arrays (32 + 2 x 128
cells per slice lane) in a second Read, by index, for the slice lanes that saw traffic.

The counters' epoch is the pipeline's cookie: the driver sets a random one with every
SetForwardingPipelineConfig, and a restarted switch has none until a driver sets the
pipeline again, so a restart or a reload changes it.
"""

from __future__ import annotations

import secrets
from collections.abc import Iterable, Mapping

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


def cell_reads(p4info: P4Info) -> list[p4runtime_pb2.Entity]:
    """Wildcard reads of every per-cell counter."""
    out = []
    for name in CELL_COUNTERS:
        e = p4runtime_pb2.Entity()
        e.counter_entry.counter_id = p4info.counter_id(name)
        out.append(e)
    return out


def delay_reads(p4info: P4Info, cells: Iterable[int]) -> list[p4runtime_pb2.Entity]:
    """Reads of every delay counter of each slice lane given, by index."""
    out = []
    for name, width in DELAY_ARRAYS:
        cid = p4info.counter_id(name)
        for cell in cells:
            for i in range(cell * width, (cell + 1) * width):
                e = p4runtime_pb2.Entity()
                e.counter_entry.counter_id = cid
                e.counter_entry.index.index = i
                out.append(e)
    return out


def delay_cells(p4info: P4Info, got: Iterable[p4runtime_pb2.Entity]) -> dict[str, dict[int, list[int]]]:
    """{array name: {slice lane cell: its packet counts}} of the delay arrays' answers."""
    arrays = {p4info.counter_id(name): (name, width) for name, width in DELAY_ARRAYS}
    out: dict[str, dict[int, list[int]]] = {name: {} for name, _ in DELAY_ARRAYS}
    for ent in got:
        c = ent.counter_entry
        if ent.HasField("counter_entry") and c.counter_id in arrays:
            name, width = arrays[c.counter_id]
            out[name].setdefault(c.index.index // width, [0] * width)[c.index.index % width] = c.data.packet_count
    return out


def active_cells(counters: Mapping[str, Cells], lanes: int) -> list[int]:
    """Cells of a lane the switch has where a packet entered, left or was dropped."""
    seen: set[int] = set()
    for name in (RX, TX, POLICED, UNROUTED):
        seen.update(i for i, (pk, _) in counters[name].items() if pk and i % MAX_LANES < lanes)
    return sorted(seen)


def slice_lanes(
    counters: Mapping[str, Cells],
    delays: Mapping[str, Mapping[int, list[int]]],
    cells: Iterable[int],
    policer_reason: str,
) -> dict[str, LaneCounters]:
    """Counters.slice_lanes ("slice_id/lane") for ``cells``. Slice 0 holds what the
    classifier missed (its lane from the miss policy). The histogram's count is the sum of
    its buckets: every packet that left counted once, in one bucket."""
    out: dict[str, LaneCounters] = {}
    for cell in cells:
        rx = counters[RX].get(cell, (0, 0))
        tx = counters[TX].get(cell, (0, 0))
        drops = {reason: n for reason, n in (
            (policer_reason, counters[POLICED].get(cell, (0, 0))[0]),
            ("no_route", counters[UNROUTED].get(cell, (0, 0))[0]),
        ) if n}
        buckets = delays[HISTOGRAM].get(cell, [0] * DELAY_BUCKETS)
        delay = DelayHistogram(
            unit_ns=UNIT_NS,
            count=sum(buckets),
            sum=nibble_total(delays[SUM_NIBBLES].get(cell, [])),
            max=nibble_total(delays[MAX_NIBBLES].get(cell, [])),
            buckets=tuple(buckets),
        )
        out[f"{cell // MAX_LANES}/{cell % MAX_LANES}"] = LaneCounters(
            packets=rx[0], bytes=rx[1], drops=drops, ecn_marks=counters[ECN].get(cell, (0, 0))[0],
            tx_packets=tx[0], tx_bytes=tx[1], delay=delay,
        )
    return out
