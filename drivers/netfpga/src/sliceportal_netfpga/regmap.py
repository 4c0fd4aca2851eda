"""The register map of the RTL (dataplane/netfpga/rtl, documented in docs/netfpga.md).

Byte addresses on the AXI4-Lite port; 64-bit counters are two words, low first, read
from the snapshot the SNAPSHOT register takes.
"""

from __future__ import annotations

ID_VALUE = 0x5350_4E46  # "SPNF"

# Global block.
ID = 0x00000
HW_VERSION = 0x00004
PATHS = 0x00008
LANES = 0x0000C
TCAM_ENTRIES = 0x00010
QUEUE_DEPTH = 0x00014
DATA_WIDTH = 0x00018
CLOCK_HZ = 0x0001C  # the clock the bitstream is built for: bit/s -> bytes per cycle
SNAPSHOT = 0x00020
CYCLES = 0x00028
PARSED_PACKETS = 0x00030
MALFORMED_PACKETS = 0x00038
NON_IPV4_PACKETS = 0x00040
SCRATCH = 0x00048
STATS_SLICES = 0x0004C  # slice ids the slice x lane telemetry counts (0 on a bitstream before 1.1)
EPOCH = 0x00050  # 0 after reset; the first non-zero write sticks until the next reset

# TCAM block: two banks, writes only into the one packets do not use.
TCAM = 0x20000
ACTIVE_BANK = TCAM + 0x0000
REFUSED_WRITES = TCAM + 0x0004
ENTRY_WORDS = 7


def bank_count(bank: int) -> int:
    return TCAM + 0x20 + 0x10 * bank


def bank_version(bank: int) -> int:
    """Low word; the high word follows at +4."""
    return TCAM + 0x24 + 0x10 * bank


def entry(bank: int, index: int, word: int = 0) -> int:
    return TCAM + 0x10000 + 0x8000 * bank + 0x20 * index + 4 * word


# Classifier counters: per TCAM entry index {packets, bytes}; misses; default path.
CLASSIFIER = 0x40000


def rule_counter(index: int) -> int:
    return CLASSIFIER + 0x10 * index


MISS_COUNTER = CLASSIFIER + 0x4000  # packets, bytes
DEFAULT_PATH_COUNTER = CLASSIFIER + 0x4010
TO_PHYS_COUNTER = CLASSIFIER + 0x4020

# Queue counters: queue q = rr_path * lanes + lane.
QUEUES = 0x80000
QUEUE_STRIDE = 0x80
QUEUE_FIELDS = (
    "enq_packets",
    "enq_bytes",
    "deq_packets",
    "deq_bytes",
    "drop_packets",
    "drop_bytes",
    "sojourn_sum",
    "sojourn_max",
)


def queue_counter(queue: int, field: int) -> int:
    return QUEUES + QUEUE_STRIDE * queue + 8 * field


def queue_occupancy(queue: int) -> int:
    return QUEUES + QUEUE_STRIDE * queue + 0x40


# Rate limiter (sp_rate_limiter): per-slice token bucket, slice s at RATE_STRIDE * s.
# The offsets mirror the RL_* localparams of rtl/sp_rate_limiter.v (checked by
# dataplane/netfpga/tb/test_regmap_consistency.py).
RATE = 0xC0000
RATE_STRIDE = 0x20
RATE_FIELDS = {
    "rate": 0x00,  # Q8.24 bytes per clock cycle
    "burst": 0x04,  # bytes
    "enable": 0x08,  # bit 0; 0 -> 1 starts the bucket full
    "tokens": 0x0C,  # whole bytes, live
    "drop_packets": 0x10,  # 64-bit, snapshot
    "drop_bytes": 0x18,  # 64-bit, snapshot
}
RATE_SLICES = RATE + 0x8000
RATE_FRAC_BITS = RATE + 0x8004


def rate_reg(slice_id: int, field: str) -> int:
    return RATE + RATE_STRIDE * slice_id + RATE_FIELDS[field]


# Per slice x lane telemetry (sp_slice_stats): entry e = slice * lanes + lane at
# STATS_STRIDE * e; 64-bit values from the snapshot. Offsets mirror the ST_* localparams of
# rtl/sp_slice_stats.v (checked by dataplane/netfpga/tb/test_regmap_consistency.py).
STATS = 0xA0000
STATS_STRIDE = 0x200
STATS_FIELDS = {
    "enq_packets": 0x00,  # committed to the queue
    "enq_bytes": 0x08,
    "queue_drop_packets": 0x10,  # dropped whole: the queue had no room
    "queue_drop_bytes": 0x18,
    "rate_drop_packets": 0x20,  # dropped by the slice's token bucket, before the queue
    "rate_drop_bytes": 0x28,
    "tx_packets": 0x30,  # left the queue towards the DMA port (= delay count)
    "tx_bytes": 0x38,
    "delay_sum": 0x40,  # sojourns, clock cycles
    "delay_max": 0x48,  # cycles
}
STATS_DELAY_BUCKETS = 0x100  # + 8 * b: sojourns in [2**b, 2**(b+1)) cycles (b = 0 also 0)
DELAY_BUCKETS = 32


def stats_entry(slice_id: int, lane: int, lanes: int) -> int:
    return STATS + STATS_STRIDE * (slice_id * lanes + lane)


def stats_field(slice_id: int, lane: int, lanes: int, field: str) -> int:
    return stats_entry(slice_id, lane, lanes) + STATS_FIELDS[field]


def stats_bucket(slice_id: int, lane: int, lanes: int, bucket: int) -> int:
    return stats_entry(slice_id, lane, lanes) + STATS_DELAY_BUCKETS + 8 * bucket
