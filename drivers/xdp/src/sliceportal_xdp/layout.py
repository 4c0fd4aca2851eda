"""Byte layouts of the map keys and values, mirroring dataplane/xdp/src/sliceportal.h."""

from __future__ import annotations

import struct

MAX_RULES = 1024
WORDS = MAX_RULES // 64
BITMAP_BYTES = WORDS * 8
MAX_LANE_SLOTS = 256
MAX_LANES = 8
MAX_SLICES = 256
MAX_CPUS = 64
PORTS = 65536
DSCPS = 64
MISS_INDEX = MAX_RULES  # rule_stats slot of misses

# default max_entries of the per-version maps (SP_IP_PREFIXES / SP_TUNNEL_KEYS)
IP_PREFIXES = 16384
TUNNEL_KEYS = 16384

SPECIAL_SLOTS = (
    "vni_present",
    "vni_absent",
    "teid_present",
    "teid_absent",
    "vlan_present",
    "vlan_absent",
    "src_ip_any",
    "dst_ip_any",
    "dst_port_any",
    "dscp_any",
)  # enum sp_special

U32 = struct.Struct("<I")
LPM_KEY = struct.Struct("<I4s")  # prefixlen (host order), address (network order)
ACTION = struct.Struct("<HBBI")  # slice_id, lane, rr_path, flags
ACT_LIMITED = 1
META = struct.Struct("<8I32s")  # words rules lanes paths miss_mode miss_lane miss_path pad version
QOS = struct.Struct("<QQQ")  # rate_Bps, burst_bytes, ecn_ns (ECN_OFF: no marking)
ECN_OFF = 2**64 - 1  # SP_ECN_OFF
LANE_CFG = struct.Struct("<II")  # cpu, flags
ALT = struct.Struct("<6s6sII")  # dst_mac, src_mac, dst_ip (network order), valid
CONFIG = struct.Struct("<IIII")  # generation (bit 0 = live copy), flags, cpu_map_id, pad
COUNTER = struct.Struct("<7Q")  # packets bytes alt drop_rate steered passed ecn
COUNTER_FIELDS = 7
CPUMAP_VAL = struct.Struct("<II")  # qsize, prog fd (0 = none)
LAST = struct.Struct("<IHBBII5IHBB")
BUCKET_SIZE = 24
EGRESS = struct.Struct(f"<II4Q{MAX_LANES}Q")  # lock, pad, rate_Bps, burst_bytes, tokens, last_ns, reserve[]

MISS_ALGORITHM1, MISS_FIXED = 0, 1
LANE_STEER, LANE_ALT = 1, 2
CFG_RECORD_LAST, CFG_MISS_TO_ALT, CFG_NO_CACHE, CFG_EGRESS = 1, 2, 4, 8
# struct sp_cache_slot: key (24 bytes), val {generation, rule, flags, slice_id, lane, rr_path}, pad,
# pending (a COUNTER)
CACHE_SLOT = struct.Struct("<24sIHHHBBI7Q")
FLOW_CACHE = 16384  # SP_FLOW_CACHE
G_PACKETS, G_MALFORMED, G_UNPARSED, G_TX_NO_ALT, G_OVERFLOW, G_N = range(6)
LANE_CAPPED = 4
LANE_CAP = struct.Struct("<II6Q")  # lock, pad, tokens, last_ns, rate_pps, burst, max_pps, events
P_VNI, P_TEID, P_VLAN = 1, 2, 4


def bitmap_bytes(bits: int) -> bytes:
    return bits.to_bytes(BITMAP_BYTES, "little")


def bitmap_int(raw: bytes) -> int:
    return int.from_bytes(raw[:BITMAP_BYTES], "little")
