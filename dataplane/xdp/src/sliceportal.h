/* Structures shared by the XDP program (sliceportal.bpf.c) and its Python driver
 * (drivers/xdp/src/sliceportal_xdp/layout.py mirrors every struct here byte for byte). */
#ifndef SLICEPORTAL_H
#define SLICEPORTAL_H

#define SP_MAX_RULES 1024                 /* classifier width: rules per version */
#define SP_WORDS (SP_MAX_RULES / 64)      /* u64 words in a rule bitmap */
#define SP_MAX_LANE_SLOTS 256             /* rr_path * lanes + lane */
#define SP_MAX_LANES 8
#define SP_MAX_SLICES 256                 /* slice ids 0 (misses) .. 255 */
#define SP_MAX_CPUS 64
#define SP_GTP_MAX_EXT 4                  /* GTP-U extension headers followed */

/* Capacities (max_entries) of the per-version lookup maps; the driver may override. */
#define SP_IP_PREFIXES 16384
#define SP_TUNNEL_KEYS 16384

/* Indices into the per-version `special` array. Per tunnel field: the rules every packet
 * carrying the header matches (wildcard or "any value"; ORed onto the hash map's exact
 * rules) and those a packet lacking it matches (wildcards). Per other field: its wildcard
 * rules, ORed onto what the lookup returns, so a rule without that field is one slot,
 * not a bit in every slot (65 536 ports) -- adding or removing it writes O(1) slots. */
enum sp_special {
	SP_VNI_PRESENT = 0,
	SP_VNI_ABSENT,
	SP_TEID_PRESENT,
	SP_TEID_ABSENT,
	SP_VLAN_PRESENT,
	SP_VLAN_ABSENT,
	SP_SRC_ANY,
	SP_DST_ANY,
	SP_PORT_ANY,
	SP_DSCP_ANY,
	SP_SPECIAL_N,
};

struct sp_bitmap {
	__u64 w[SP_WORDS];
};

struct sp_lpm_key {
	__u32 prefixlen;
	__u32 addr; /* network byte order */
};

#define SP_ACT_LIMITED 1 /* the slice has a rate limit: look up its bucket */

/* What a rule does (per version, indexed by rule). */
struct sp_action {
	__u16 slice_id;
	__u8 lane;
	__u8 rr_path;
	__u32 flags;
};

#define SP_MISS_ALGORITHM1 0
#define SP_MISS_FIXED 1

/* Per-version metadata (index 0 of the meta_a / meta_b arrays). */
struct sp_meta {
	__u32 words;      /* bitmap words in use: ceil(rules / 64), at least 1 */
	__u32 rules;      /* rule slots in use: the highest rule position + 1 (positions have gaps) */
	__u32 lanes;
	__u32 paths;
	__u32 miss_mode;
	__u32 miss_lane;
	__u32 miss_path;
	__u32 pad;
	char version[32]; /* NativePlan.version, NUL padded */
};

/* Per-version per-slice QoS; rate_Bps = 0 means unlimited. The bucket is seed 004's
 * virtual queue seen from the other side: its backlog is burst - tokens, drained at
 * rate_Bps, so the queue's delay is (burst - tokens) / rate and tail drop above C_DELAY is
 * "fewer tokens than the frame". ECN (M_DELAY): an ECN-capable frame is marked CE when
 * the backlog after it exceeds ecn_ns of the rate; SP_ECN_OFF = the slice marks nothing. */
#define SP_ECN_OFF 0xffffffffffffffffULL
struct sp_slice_qos {
	__u64 rate_Bps;
	__u64 burst_bytes;
	__u64 ecn_ns;
};

/* Token bucket state, shared by all CPUs under the lock (per-CPU buckets would let
 * each CPU send the full rate). Tokens are kept in byte*1e9 units so that refills of a
 * fraction of a byte are not lost. */
struct sp_bucket {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 tokens;
	__u64 last_ns;
};

#define SP_LANE_STEER 1 /* cpumap-redirect this lane to its CPU */
#define SP_LANE_ALT 2   /* this lane is not prioritised: send to the alt node */
#define SP_LANE_CAPPED 4 /* the lane's queue has a capacity (lane_cap): overflow to alt */

/* The capacity of a prioritised lane's queue (seed 001: what its CPU takes), a token
 * bucket in packets: `burst` packets of queue, drained at `rate_pps`. A prioritised
 * packet beyond it is steered to the alt node (and counted) instead of being dropped at
 * the full queue. Tokens in packets x NSEC, as sp_bucket. The rate adapts to what the
 * CPU really drains: each time its cpumap queue overflowed anyway (cpumap_full, counted
 * by the enqueue tracepoint) it drops by a quarter (to max_pps / 16 at least); while the
 * bucket stays full it climbs back by max_pps / 64 (to max_pps at most). */
struct sp_lane_cap {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 tokens;
	__u64 last_ns;
	__u64 rate_pps;
	__u64 burst;
	__u64 max_pps;  /* the configured capacity */
	__u64 events;   /* cpumap_full[cpu] last acted on */
};

/* The node's egress budget: one token bucket (bytes x NSEC, as sp_bucket) for everything
 * the program forwards; lane l is admitted only while at least reserve[l] bytes stay in the
 * bucket after it, so an overload refuses the lowest lanes first and the highest lane last
 * (strict priority without a queue: the excess is dropped, counted as drop_rate). The
 * testbed's congestion scenario sets it; rate_Bps 0 = no budget (the default). */
struct sp_egress {
	struct bpf_spin_lock lock;
	__u32 pad;
	__u64 rate_Bps;
	__u64 burst_bytes;
	__u64 tokens;
	__u64 last_ns;
	__u64 reserve[SP_MAX_LANES];
};

struct sp_lane_cfg {
	__u32 cpu;
	__u32 flags;
};

struct sp_alt {
	__u8 dst_mac[6];
	__u8 src_mac[6];
	__u32 dst_ip; /* network byte order */
	__u32 valid;
};

/* Global configuration (index 0 of `config`, a mmapable array: the driver flips the
 * version with one aligned 4-byte store, which no reader can see half-done). */
#define SP_CFG_RECORD_LAST 1 /* write every decision into `last` (tests) */
#define SP_CFG_MISS_TO_ALT 2 /* misses are not prioritised (seed 001 Algorithm 1) */
#define SP_CFG_NO_CACHE 4    /* classify every packet (bypass the flow cache) */
#define SP_CFG_EGRESS 8      /* an egress budget is set: police by it (else skip the bucket) */

struct sp_config {
	__u32 generation; /* bumped by every push; tables _a live when even, _b when odd */
	__u32 flags;
	__u32 cpu_map_id; /* kernel id of our cpu_map: the tracepoint counts only its drops */
	__u32 pad;
};

/* Exact-match flow cache: a direct-mapped per-CPU array; a slot holds the full
 * innermost key (compared in full, so a hash collision only costs a classification)
 * and the decision of one generation. Per CPU, so no reader sees a half-written slot. */
#define SP_FLOW_CACHE 16384 /* slots per CPU, a power of two: */
#define SP_FLOW_CACHE_BITS 14 /* its log2 */

struct sp_flow_key {
	__u32 src_ip, dst_ip; /* network order */
	__u32 vni, teid, vlan;
	__u16 dst_port;
	__u8 dscp;
	__u8 present;
};

struct sp_flow_val {
	__u32 generation;
	__u16 rule;
	__u16 flags;
	__u16 slice_id;
	__u8 lane;
	__u8 rr_path;
};

struct sp_counter {
	__u64 packets;
	__u64 bytes;
	__u64 alt;            /* forwarded to the alternative node (XDP_TX) */
	__u64 drop_rate;      /* dropped by the slice rate limit */
	__u64 steered;        /* redirected to the lane's CPU */
	__u64 passed;         /* XDP_PASS to the local stack */
	__u64 ecn;            /* marked CE (seed 004 M_DELAY) */
};

/* A cache hit touches this one entry: `pending` counts the slot's packets since it was
 * filled and is added to rule_stats / lane_stats / slice_stats (by `val`) when the slot
 * is refilled; the driver adds the pending counts of every slot when it reads counters. */
struct sp_cache_slot {
	struct sp_flow_key key;
	struct sp_flow_val val;
	__u32 pad;
	struct sp_counter pending;
};

enum sp_global {
	SP_G_PACKETS = 0,
	SP_G_MALFORMED,  /* truncated / inconsistent headers: default path (XDP_PASS) */
	SP_G_UNPARSED,   /* not IPv4 user plane at some layer (ARP, IPv6, GTP signalling): default path */
	SP_G_TX_NO_ALT,  /* wanted the alt node but none is configured: passed */
	SP_G_OVERFLOW,   /* prioritised, beyond its lane's queue capacity: steered to alt */
	SP_G_N,
};

/* Verdict record for tests (only written when SP_CFG_RECORD_LAST is set). */
struct sp_last {
	__u32 rule;
	__u16 slice_id;
	__u8 lane;
	__u8 rr_path;
	__u32 verdict;
	__u32 parsed;     /* 1 when classified, 0 on the default path */
	__u32 src_ip, dst_ip;
	__u32 vni, teid, vlan;
	__u16 dst_port;
	__u8 dscp;
	__u8 present;     /* bit 0 vni, 1 teid, 2 vlan */
};

#endif
