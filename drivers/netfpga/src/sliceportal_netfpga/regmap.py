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
