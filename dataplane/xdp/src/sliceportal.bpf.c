// SPDX-License-Identifier: GPL-2.0
/* sliceportal XDP data plane (seed 001 Algorithm 1 on an exact classifier).
 *
 * parse (outer Ethernet / VLAN / IPv4 / UDP 4789 / VXLAN / Ethernet / IPv4 / UDP 2152 /
 * GTP-U + extension headers / IPv4 / UDP|TCP, any prefix of that stack being allowed)
 * -> bit-vector classification equal to RuleIR.classify (one lookup per field, AND of
 *    the candidate-rule bitmaps, lowest set bit = first matching rule)
 * -> per-slice token bucket
 * -> steer: prioritised lane -> cpumap redirect to the lane's CPU; miss, alt lane or
 *    overloaded CPU -> rewrite outer MAC/IP from the alt map and XDP_TX.
 * Rule tables exist twice (_a/_b); config.active selects the live copy, so a push
 * fills the idle copy and flips one word. Layouts: sliceportal.h. */
#include <linux/bpf.h>
#include <linux/if_ether.h>
#include <linux/in.h>
#include <linux/ip.h>
#include <linux/udp.h>
#include <linux/tcp.h>
#include <bpf/bpf_helpers.h>
#include <bpf/bpf_endian.h>

#include "sliceportal.h"

#define VXLAN_PORT 4789
#define GTPU_PORT 2152
#define NSEC 1000000000ULL
#define READ_ONCE(x) (*(volatile typeof(x) *)&(x))

char LICENSE[] SEC("license") = "GPL";

/* ---- maps --------------------------------------------------------------------- */

#define ARRAY(name, n, V)                                  \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_ARRAY);          \
		__uint(max_entries, n);                    \
		__type(key, __u32);                        \
		__type(value, V);                          \
	} name SEC(".maps")

#define PERCPU(name, n, V)                                 \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);   \
		__uint(max_entries, n);                    \
		__type(key, __u32);                        \
		__type(value, V);                          \
	} name SEC(".maps")

/* Per-version arrays are mmapable: the driver writes and reads a whole copy with memcpy
 * instead of one bpf(2) element at a time (the port array alone is 8 MB). */
#define MMARRAY(name, n, V)                                \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_ARRAY);          \
		__uint(max_entries, n);                    \
		__uint(map_flags, BPF_F_MMAPABLE);         \
		__type(key, __u32);                        \
		__type(value, V);                          \
	} name SEC(".maps")

#define LPM(name)                                          \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_LPM_TRIE);       \
		__uint(max_entries, SP_IP_PREFIXES);       \
		__uint(map_flags, BPF_F_NO_PREALLOC);      \
		__type(key, struct sp_lpm_key);            \
		__type(value, struct sp_bitmap);           \
	} name SEC(".maps")

#define HASH(name)                                         \
	struct {                                           \
		__uint(type, BPF_MAP_TYPE_HASH);           \
		__uint(max_entries, SP_TUNNEL_KEYS);       \
		__type(key, __u32);                        \
		__type(value, struct sp_bitmap);           \
	} name SEC(".maps")

/* One full copy of the rule tables. */
#define VERSION_MAPS(s)                                    \
	LPM(src_lpm_##s);                                  \
	LPM(dst_lpm_##s);                                  \
	MMARRAY(port_##s, 65536, struct sp_bitmap);        \
	MMARRAY(dscp_##s, 64, struct sp_bitmap);           \
	HASH(vni_##s);                                     \
	HASH(teid_##s);                                    \
	HASH(vlan_##s);                                    \
	MMARRAY(special_##s, SP_SPECIAL_N, struct sp_bitmap); \
	MMARRAY(actions_##s, SP_MAX_RULES, struct sp_action); \
	MMARRAY(qos_##s, SP_MAX_SLICES, struct sp_slice_qos); \
	MMARRAY(meta_##s, 1, struct sp_meta)

VERSION_MAPS(a);
VERSION_MAPS(b);

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(max_entries, 1);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32);
	__type(value, struct sp_config);
} config SEC(".maps");

PERCPU(flow_cache, SP_FLOW_CACHE, struct sp_cache_slot);
ARRAY(lane_cfg, SP_MAX_LANES, struct sp_lane_cfg);
ARRAY(overload, SP_MAX_CPUS, __u32);
ARRAY(alt, 1, struct sp_alt);
ARRAY(buckets, SP_MAX_SLICES, struct sp_bucket);
ARRAY(egress, 1, struct sp_egress);
ARRAY(lane_cap, SP_MAX_LANES, struct sp_lane_cap);
ARRAY(cpumap_full, SP_MAX_CPUS, __u64); /* by target CPU: enqueue events that dropped frames */
ARRAY(last, 1, struct sp_last);

struct {
	__uint(type, BPF_MAP_TYPE_CPUMAP);
	__uint(max_entries, SP_MAX_CPUS);
	__type(key, __u32);
	__type(value, struct bpf_cpumap_val);
} cpu_map SEC(".maps");

PERCPU(rule_stats, SP_MAX_RULES + 1, struct sp_counter); /* [SP_MAX_RULES] = misses */
PERCPU(lane_stats, SP_MAX_LANE_SLOTS, struct sp_counter);
PERCPU(slice_stats, SP_MAX_SLICES, struct sp_counter);
PERCPU(global_stats, SP_G_N, __u64);
PERCPU(cpumap_drops, SP_MAX_CPUS, __u64); /* by target CPU: its cpumap queue was full */

/* ---- parsing ------------------------------------------------------------------- */

struct flow {
	__u32 src_ip, dst_ip; /* network order */
	__u32 vni, teid, vlan;
	__u16 dst_port;
	__u8 dscp;
	__u8 present; /* bit 0 vni, 1 teid, 2 vlan */
	/* where the alt rewrite writes: offsets of the outermost IPv4 and L4 headers
	 * (offsets, not pointers: parse() is a global function, verified on its own) */
	__u16 ip1_off;
	__u16 l4_1_off;
	__u16 ipn_off; /* the innermost IPv4 header: where an ECN mark goes (docs/packets.md) */
};
/* the parsed fields ARE the flow-cache key (no copy on the hot path) */
_Static_assert(__builtin_offsetof(struct flow, ip1_off) == sizeof(struct sp_flow_key), "flow starts with the key");
_Static_assert(__builtin_offsetof(struct flow, present) == __builtin_offsetof(struct sp_flow_key, present), "key");
_Static_assert(__builtin_offsetof(struct flow, dst_port) == __builtin_offsetof(struct sp_flow_key, dst_port), "key");
_Static_assert(__builtin_offsetof(struct flow, vlan) == __builtin_offsetof(struct sp_flow_key, vlan), "key");

#define P_VNI 1
#define P_TEID 2
#define P_VLAN 4

#define PARSE_OK 0
#define PARSE_MALFORMED 1
#define PARSE_UNPARSED 2
#define PARSE_GTP_SIGNAL 3 /* GTP-U without a user packet: key on the carrying IPv4 */

struct vxlanhdr {
	__u8 flags;
	__u8 rsvd[3];
	__u8 vni[3];
	__u8 rsvd2;
};

struct gtphdr {
	__u8 flags;
	__u8 type;
	__be16 length;
	__be32 teid;
};

struct vlanhdr {
	__be16 tci;
	__be16 proto;
};

/* An IPv4 header whose IHL and total length fit in the packet; returns the header or
 * NULL. Total length beyond the buffer means the packet was truncated. */
static __always_inline struct iphdr *parse_ipv4(void **pos, void *end)
{
	struct iphdr *ip = *pos;
	if ((void *)(ip + 1) > end)
		return NULL;
	if (ip->version != 4 || ip->ihl < 5)
		return NULL;
	__u32 hlen = ip->ihl * 4;
	__u32 tot = bpf_ntohs(ip->tot_len);
	if (tot < hlen || (void *)ip + tot > end || (void *)ip + hlen > end)
		return NULL;
	*pos = (void *)ip + hlen;
	return ip;
}

static __always_inline int is_fragment(struct iphdr *ip)
{
	return ip->frag_off & bpf_htons(0x1fff);
}

/* 1 when `ip` carries UDP to `port` (not a later fragment) with its full header; 0 when
 * not; -1 when the ports are cut, or the header of a tunnel port is (docs/packets.md). */
static __always_inline int udp_to(struct iphdr *ip, void *pos, void *end, __u16 port)
{
	if (ip->protocol != IPPROTO_UDP || is_fragment(ip))
		return 0;
	struct udphdr *udp = pos;
	if (pos + 4 > end)
		return -1;
	if (udp->dest != bpf_htons(port))
		return 0;
	if ((void *)(udp + 1) > end)
		return -1;
	return 1;
}

static __always_inline int parse_gtp(void **pos, void *end, struct flow *f)
{
	struct gtphdr *g = *pos;
	if ((void *)(g + 1) > end)
		return PARSE_MALFORMED;
	if ((g->flags >> 5) != 1) /* the PT bit is not checked (docs/packets.md) */
		return PARSE_MALFORMED;
	f->teid = bpf_ntohl(g->teid);
	f->present |= P_TEID;
	if (g->type != 255) /* signalling (echo, error indication, end marker) */
		return PARSE_GTP_SIGNAL;
	void *p = (void *)(g + 1);
	if (g->flags & 0x07) {
		__u8 *opt = p;
		if ((void *)(opt + 4) > end)
			return PARSE_MALFORMED;
		__u8 next = (g->flags & 0x04) ? opt[3] : 0;
		p = opt + 4;
#pragma unroll
		for (int i = 0; i < SP_GTP_MAX_EXT; i++) {
			if (!next)
				break;
			__u8 *ext = p;
			if ((void *)(ext + 1) > end)
				return PARSE_MALFORMED;
			__u32 elen = (__u32)ext[0] * 4;
			if (!elen)
				return PARSE_MALFORMED;
			__u8 *tail = ext + elen - 1;
			if ((void *)(tail + 1) > end)
				return PARSE_MALFORMED;
			next = *tail;
			p = tail + 1;
		}
		if (next)
			return PARSE_MALFORMED; /* more extension headers than we follow */
	}
	*pos = p;
	return PARSE_OK;
}

/* The fast parse: the stacks of docs/packets.md with option-less IPv4 headers, no VLAN
 * tag, no GTP-U optional fields and no fragments, read at fixed offsets inside ONE
 * validated window (a single bounds check instead of one per header). It accepts a
 * packet only where parse() would return PARSE_OK with the same fields; anything else
 * (shorter frames included) returns -1 and goes to parse(). The key comes out as the
 * three words of struct sp_flow_key, in registers (hashed and compared there, stored only
 * when a slot is refilled); each IPv4 header is checked from one 8-byte load. The cost
 * of the hot path follows its instruction count (bench/xdp_cost.py), so it is kept short. */
#define FAST_WINDOW 124 /* eth 14 + ip 20 + udp 8 + vxlan 8 + eth 14 + ip 20 + udp 8 + gtp 8 + ip 20 + ports 4 */
#define OFF_IP1 14
#define OFF_L4_1 34

/* struct sp_flow_key as words (little-endian): w0 = src_ip | dst_ip << 32, w1 = vni |
 * teid << 32, w2 = vlan | dst_port << 32 | dscp << 48 | present << 56 */
struct fkey {
	__u64 w0, w1, w2;
};
_Static_assert(sizeof(struct sp_flow_key) == sizeof(struct fkey), "the key is three words");
_Static_assert(__builtin_offsetof(struct sp_flow_key, vni) == 8 && __builtin_offsetof(struct sp_flow_key, vlan) == 16 &&
		       __builtin_offsetof(struct sp_flow_key, dst_port) == 20 &&
		       __builtin_offsetof(struct sp_flow_key, present) == 23,
	       "fkey word layout");

/* Bytes 0..7 of an IPv4 header, as one little-endian word: version 4 with IHL 5 (no
 * options), no fragment offset and no MF flag, and a total length of at least a header
 * that fits the `room` bytes from the header to the end of the frame. */
static __always_inline int plain_ipv4(__u64 w, __u64 room)
{
	__u64 tot = bpf_ntohs((__u16)(w >> 16));
	return (w & 0xff1f0000000000ffULL) == 0x45 && tot - 20 <= room - 20;
}

#define LOAD(T, p, off) (*(T *)((void *)(p) + (off))) /* inside the validated window */

static __always_inline int parse_fast(void *data, void *end, struct fkey *k, __u32 *ipn_off)
{
	if (data + FAST_WINDOW > end)
		return -1;
	__u64 len = end - data;
	__u64 w = LOAD(__u64, data, OFF_IP1);
	if (LOAD(__be16, data, 12) != bpf_htons(ETH_P_IP) || !plain_ipv4(w, len - OFF_IP1))
		return -1;
	__u32 off = OFF_IP1; /* the innermost IPv4 header so far */
	__u64 tunnel = 0, present = 0;
	__u8 proto = LOAD(__u8, data, 23);
	__be16 dport = LOAD(__be16, data, 36);
	if (proto == IPPROTO_UDP && dport == bpf_htons(VXLAN_PORT)) {
		/* the 3 VNI bytes and the reserved byte after them, as one big-endian word */
		tunnel = bpf_ntohl(LOAD(__u32, data, 46)) >> 8;
		present = P_VNI;
		w = LOAD(__u64, data, 64);
		if (LOAD(__be16, data, 62) != bpf_htons(ETH_P_IP) || !plain_ipv4(w, len - 64))
			return -1;
		off = 64;
		if (LOAD(__u8, data, 73) == IPPROTO_UDP && LOAD(__be16, data, 86) == bpf_htons(GTPU_PORT)) {
			/* G-PDU (type 255), version 1, no optional fields: flags & 0xe7 == 0x20 */
			w = LOAD(__u64, data, 100);
			if ((LOAD(__u16, data, 92) & 0xffe7) != 0xff20 || !plain_ipv4(w, len - 100))
				return -1;
			tunnel |= (__u64)bpf_ntohl(LOAD(__u32, data, 96)) << 32;
			present |= P_TEID;
			off = 100;
		}
	} else if (proto == IPPROTO_UDP && dport == bpf_htons(GTPU_PORT)) {
		w = LOAD(__u64, data, 50);
		if ((LOAD(__u16, data, 42) & 0xffe7) != 0xff20 || !plain_ipv4(w, len - 50))
			return -1;
		tunnel = (__u64)bpf_ntohl(LOAD(__u32, data, 46)) << 32;
		present = P_TEID;
		off = 50;
	}
	/* the innermost header is at most at offset 100: its ports lie in the window */
	struct iphdr *ip = data + off;
	__u64 port = 0;
	if (ip->protocol == IPPROTO_UDP || ip->protocol == IPPROTO_TCP)
		port = bpf_ntohs(LOAD(__be16, ip, 22));
	*ipn_off = off;
	k->w0 = LOAD(__u64, ip, 12); /* saddr and daddr, adjacent as in the key */
	k->w1 = tunnel;
	k->w2 = port << 32 | ((w >> 10) & 0x3f) << 48 | present << 56; /* DSCP: TOS (byte 1 of w) >> 2 */
	return PARSE_OK;
}

__attribute__((noinline)) int parse(struct xdp_md *ctx, struct flow *f)
{
	if (!f)
		return PARSE_MALFORMED;
	void *end = (void *)(long)ctx->data_end;
	void *pos = (void *)(long)ctx->data;
	struct ethhdr *eth = pos;
	int r;

	if ((void *)(eth + 1) > end)
		return PARSE_MALFORMED;
	__be16 proto = eth->h_proto;
	pos = eth + 1;
#pragma unroll
	for (int i = 0; i < 2; i++) {
		if (proto != bpf_htons(ETH_P_8021Q) && proto != bpf_htons(ETH_P_8021AD))
			break;
		struct vlanhdr *vh = pos;
		if ((void *)(vh + 1) > end)
			return PARSE_MALFORMED;
		if (!(f->present & P_VLAN)) {
			f->vlan = bpf_ntohs(vh->tci) & 0x0fff;
			f->present |= P_VLAN;
		}
		proto = vh->proto;
		pos = vh + 1;
	}
	if (proto != bpf_htons(ETH_P_IP))
		return PARSE_UNPARSED;

	struct iphdr *ip = parse_ipv4(&pos, end);
	if (!ip)
		return PARSE_MALFORMED;
	f->ip1_off = (void *)ip - (void *)eth;
	f->l4_1_off = pos - (void *)eth;

	r = udp_to(ip, pos, end, VXLAN_PORT);
	if (r < 0)
		return PARSE_MALFORMED;
	if (r) {
		struct vxlanhdr *vx = pos + sizeof(struct udphdr);
		if ((void *)(vx + 1) > end)
			return PARSE_MALFORMED;
		/* the I flag is not checked (docs/packets.md) */
		f->vni = ((__u32)vx->vni[0] << 16) | ((__u32)vx->vni[1] << 8) | vx->vni[2];
		f->present |= P_VNI;
		struct ethhdr *ieth = (void *)(vx + 1);
		if ((void *)(ieth + 1) > end)
			return PARSE_MALFORMED;
		if (ieth->h_proto != bpf_htons(ETH_P_IP))
			return PARSE_UNPARSED;
		pos = ieth + 1;
		ip = parse_ipv4(&pos, end);
		if (!ip)
			return PARSE_MALFORMED;
	}

	r = udp_to(ip, pos, end, GTPU_PORT);
	if (r < 0)
		return PARSE_MALFORMED;
	if (r) {
		void *udp_pos = pos;
		pos += sizeof(struct udphdr);
		r = parse_gtp(&pos, end, f);
		if (r == PARSE_GTP_SIGNAL) {
			pos = udp_pos; /* the key is the carrying IPv4 and its UDP 2152 */
			goto key;
		}
		if (r != PARSE_OK)
			return r;
		__u8 *ver = pos;
		if ((void *)(ver + 1) > end)
			return PARSE_MALFORMED;
		if ((*ver >> 4) != 4)
			return PARSE_UNPARSED; /* IPv6 UE */
		ip = parse_ipv4(&pos, end);
		if (!ip)
			return PARSE_MALFORMED;
	}

key:
	/* innermost IPv4 and its L4 ports (4 bytes are enough: only the ports are keys) */
	f->ipn_off = (void *)ip - (void *)eth;
	f->src_ip = ip->saddr;
	f->dst_ip = ip->daddr;
	f->dscp = ip->tos >> 2;
	f->dst_port = 0;
	if (!is_fragment(ip)) {
		if (ip->protocol == IPPROTO_UDP || ip->protocol == IPPROTO_TCP) {
			__be16 *ports = pos;
			if ((void *)(ports + 2) > end)
				return PARSE_MALFORMED;
			f->dst_port = bpf_ntohs(ports[1]);
		}
	}
	return PARSE_OK;
}

/* ---- classification ------------------------------------------------------------ */

static __always_inline __u32 ctz64(__u64 x)
{
	__u32 n = 0;
	if (!(x & 0xffffffffULL)) { n += 32; x >>= 32; }
	if (!(x & 0xffffULL)) { n += 16; x >>= 16; }
	if (!(x & 0xffULL)) { n += 8; x >>= 8; }
	if (!(x & 0xfULL)) { n += 4; x >>= 4; }
	if (!(x & 0x3ULL)) { n += 2; x >>= 2; }
	if (!(x & 0x1ULL)) { n += 1; }
	return n;
}

struct decision {
	__u32 rule; /* SP_MAX_RULES on a miss */
	__u16 slice_id;
	__u8 lane;
	__u8 rr_path;
	__u32 flags; /* SP_ACT_* */
};

static __always_inline struct sp_bitmap *special_bits(void *special, __u32 idx)
{
	return bpf_map_lookup_elem(special, &idx);
}

/* A field's two bitmaps: `*own` what the lookup of the packet's value returns and `*any`
 * the set ORed onto it (the field's wildcards; for a tunnel field, present or absent).
 * A lookup that finds nothing points `*own` at `*any` (x | x = x): no branch per word. */
static __always_inline int tunnel_bits(void *hash, void *special, __u32 value, int present, __u32 idx_present,
				       struct sp_bitmap **own, struct sp_bitmap **any)
{
	*any = special_bits(special, present ? idx_present : idx_present + 1);
	if (!*any)
		return 0;
	*own = present ? bpf_map_lookup_elem(hash, &value) : NULL;
	if (!*own)
		*own = *any;
	return 1;
}

static __always_inline void classify_in(struct flow *f, struct decision *d, void *src_lpm, void *dst_lpm,
				     void *port, void *dscp, void *vni, void *teid, void *vlan,
				     void *special, void *actions, void *meta)
{
	__u32 zero = 0;
	struct sp_meta *m = bpf_map_lookup_elem(meta, &zero);
	d->rule = SP_MAX_RULES;
	if (!m)
		return;

	struct sp_lpm_key sk = { .prefixlen = 32, .addr = f->src_ip };
	struct sp_lpm_key dk = { .prefixlen = 32, .addr = f->dst_ip };
	__u32 pk = f->dst_port, dsk = f->dscp;
	struct sp_bitmap *as = special_bits(special, SP_SRC_ANY);
	struct sp_bitmap *ad = special_bits(special, SP_DST_ANY);
	struct sp_bitmap *ap = special_bits(special, SP_PORT_ANY);
	struct sp_bitmap *aq = special_bits(special, SP_DSCP_ANY);
	struct sp_bitmap *bs = bpf_map_lookup_elem(src_lpm, &sk);
	struct sp_bitmap *bd = bpf_map_lookup_elem(dst_lpm, &dk);
	struct sp_bitmap *bp = bpf_map_lookup_elem(port, &pk);
	struct sp_bitmap *bq = bpf_map_lookup_elem(dscp, &dsk);
	struct sp_bitmap *bv, *av, *bt, *at, *bl, *al;

	if (as && ad && ap && aq && bp && bq &&
	    tunnel_bits(vni, special, f->vni, f->present & P_VNI, SP_VNI_PRESENT, &bv, &av) &&
	    tunnel_bits(teid, special, f->teid, f->present & P_TEID, SP_TEID_PRESENT, &bt, &at) &&
	    tunnel_bits(vlan, special, f->vlan, f->present & P_VLAN, SP_VLAN_PRESENT, &bl, &al)) {
		if (!bs)
			bs = as; /* no prefix holds the address: the wildcards alone */
		if (!bd)
			bd = ad;
		__u32 words = m->words;
		for (__u32 i = 0; i < SP_WORDS; i++) {
			if (i >= words)
				break;
			__u64 x = (bs->w[i] | as->w[i]) & (bd->w[i] | ad->w[i]) & (bp->w[i] | ap->w[i]) &
				  (bq->w[i] | aq->w[i]) & (bv->w[i] | av->w[i]) & (bt->w[i] | at->w[i]) &
				  (bl->w[i] | al->w[i]);
			if (x) {
				d->rule = i * 64 + ctz64(x);
				break;
			}
		}
	}

	if (d->rule < m->rules && d->rule < SP_MAX_RULES) {
		__u32 r = d->rule;
		struct sp_action *a = bpf_map_lookup_elem(actions, &r);
		if (a) {
			d->slice_id = a->slice_id;
			d->lane = a->lane;
			d->rr_path = a->rr_path;
			d->flags = a->flags;
			return;
		}
	}
	d->rule = SP_MAX_RULES;
	d->slice_id = 0;
	d->flags = 0;
	if (m->miss_mode == SP_MISS_FIXED) {
		d->lane = m->miss_lane;
		d->rr_path = m->miss_path;
	} else {
		/* seed 000 Algorithm 1, as RuleIR.miss_decision: fold DSCP bits 2:0 onto the
		 * lanes, path from the UE address (paths is a power of two) */
		d->lane = ((f->dscp & 7) * m->lanes) / 8;
		d->rr_path = bpf_ntohl(f->src_ip) & (m->paths - 1);
	}
}

/* Verified once on its own (a global function), not once per parse outcome. */
__attribute__((noinline)) int classify(struct flow *f, struct decision *d, __u32 active)
{
	if (!f || !d)
		return 0;
	if (active)
		classify_in(f, d, &src_lpm_b, &dst_lpm_b, &port_b, &dscp_b, &vni_b, &teid_b, &vlan_b,
			    &special_b, &actions_b, &meta_b);
	else
		classify_in(f, d, &src_lpm_a, &dst_lpm_a, &port_a, &dscp_a, &vni_a, &teid_a, &vlan_a,
			    &special_a, &actions_a, &meta_a);
	return 0;
}

/* ---- flow cache ---------------------------------------------------------------- */

_Static_assert(SP_FLOW_CACHE == 1 << SP_FLOW_CACHE_BITS, "cache size");

static __always_inline __u32 flow_slot(struct fkey *k)
{
	/* multiply-shift over the three words: the products are independent (one multiply
	 * of latency instead of a chain of five); the top bits of the sum depend on every
	 * key bit. It only picks the slot, the key is compared in full. */
	__u64 h = k->w0 * 0x9E3779B97F4A7C15ULL + k->w1 * 0xC2B2AE3D27D4EB4FULL + k->w2 * 0x165667B19E3779F9ULL;
	return h >> (64 - SP_FLOW_CACHE_BITS);
}

static __always_inline int same_key(struct sp_flow_key *a, struct fkey *k)
{
	__u64 *x = (__u64 *)a;
	return ((x[0] ^ k->w0) | (x[1] ^ k->w1) | (x[2] ^ k->w2)) == 0;
}

/* ---- actions ------------------------------------------------------------------- */

static __always_inline void csum_replace4(__u16 *sum, __u32 from, __u32 to, int udp)
{
	/* RFC 1624 incremental update: HC' = ~(~HC + ~m + m') */
	__u32 s = (__u16)~*sum;
	s += (__u16)~(from >> 16) + (__u16)~(from & 0xffff);
	s += (to >> 16) + (to & 0xffff);
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	__u16 r = ~s;
	if (udp && !r)
		r = 0xffff;
	*sum = r;
}

/* RFC 1624 for one 16-bit word of an IPv4 header (network order values) */
static __always_inline void csum_replace2(__u16 *sum, __u16 from, __u16 to)
{
	__u32 s = (__u16)~*sum;
	s += (__u16)~from;
	s += to;
	s = (s & 0xffff) + (s >> 16);
	s = (s & 0xffff) + (s >> 16);
	*sum = ~s;
}

/* Seed 004 ECN step marking, as slicing.p4's VirtualQueue: the innermost IPv4 header
 * (docs/packets.md, the one the flow key came from) is marked CE when its transport is
 * ECN-capable (ECT(0), ECT(1) or already CE) and it has no options; Not-ECT frames and
 * headers with options are left alone. The header checksum is fixed incrementally. Returns
 * 1 when the frame counts as marked. */
static __always_inline int ecn_mark(struct xdp_md *ctx, __u64 off)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (off > 1500)
		return 0;
	struct iphdr *ip = data + off;
	if ((void *)(ip + 1) > end)
		return 0;
	__u16 *word = (__u16 *)ip; /* version/IHL and TOS: one checksummed 16-bit word */
	__u8 *b = (__u8 *)ip;
	if (b[0] != 0x45 || !(b[1] & 3))
		return 0;
	__u16 from = *word;
	b[1] |= 3;
	csum_replace2(&ip->check, from, *word);
	return 1;
}

static __always_inline int to_alt(struct xdp_md *ctx, __u64 ip_off, __u64 l4_off)
{
	__u32 zero = 0;
	struct sp_alt *a = bpf_map_lookup_elem(&alt, &zero);
	if (!a || !a->valid)
		return -1;
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	if (ip_off > 64 || l4_off > 128)
		return -1;
	struct ethhdr *eth = data;
	struct iphdr *ip = data + ip_off;
	if ((void *)(eth + 1) > end || (void *)(ip + 1) > end)
		return -1;
	/* both MACs, adjacent in the frame as in struct sp_alt: one 8- and one 4-byte copy */
	_Static_assert(__builtin_offsetof(struct sp_alt, src_mac) == ETH_ALEN, "MACs adjacent");
	*(__u64 *)eth = *(__u64 *)a->dst_mac;
	*(__u32 *)((void *)eth + 8) = *(__u32 *)(a->dst_mac + 8);
	__u32 from = ip->daddr, to = a->dst_ip;
	if (from == to)
		return 0;
	ip->daddr = to;
	csum_replace4(&ip->check, from, to, 0);
	if (!is_fragment(ip)) {
		/* the L4 checksum covers the pseudo-header's destination address */
		if (ip->protocol == IPPROTO_UDP) {
			struct udphdr *udp = data + l4_off;
			if ((void *)(udp + 1) <= end && udp->check)
				csum_replace4(&udp->check, from, to, 1);
		} else if (ip->protocol == IPPROTO_TCP) {
			struct tcphdr *tcp = data + l4_off;
			if ((void *)(tcp + 1) <= end)
				csum_replace4(&tcp->check, from, to, 0);
		}
	}
	return 0;
}

/* One token-bucket step, shared by the slice rate limit and the egress budget: refill
 * `rate` bytes/s since *last_ns (tokens in bytes x NSEC, capped at `burst` bytes), then
 * take `cost` bytes if at least `need` are there. Called with the value's lock held. */
static __always_inline int bucket_take(__u64 *tokens, __u64 *last_ns, __u64 now, __u64 rate, __u64 burst,
				       __u64 need, __u64 cost)
{
	__u64 cap = burst * NSEC;
	/* refilling longer than this only overflows the bucket (and the product) */
	__u64 max_el = cap / rate + 1;
	/* Two CPUs read the clock before taking the lock, so `now` may be older than
	 * *last_ns; that step refills nothing and must not move *last_ns back, or the
	 * next step would refill the same nanoseconds twice (an over-admission that grows
	 * with lock contention: +5 % of the rate measured on 2 busy CPUs). */
	__u64 el = 0;
	if (now > *last_ns) {
		el = now - *last_ns;
		*last_ns = now;
	}
	if (el > max_el)
		el = max_el;
	__u64 t = *tokens + el * rate;
	if (t > cap)
		t = cap;
	int ok = t >= need * NSEC;
	if (ok)
		t -= cost * NSEC;
	*tokens = t;
	return ok;
}

#define RATE_DROP 0
#define RATE_PASS 1
#define RATE_MARK 2 /* passes, and the virtual queue's delay after it is above ecn_ns */

/* The slice's virtual queue (struct sp_slice_qos): drop, pass, or pass and mark. */
static __always_inline int rate_ok(__u32 slice, struct sp_slice_qos *q, __u64 len)
{
	if (!q || !q->rate_Bps)
		return RATE_PASS;
	struct sp_bucket *b = bpf_map_lookup_elem(&buckets, &slice);
	if (!b)
		return RATE_PASS;
	__u64 now = bpf_ktime_get_ns();
	bpf_spin_lock(&b->lock);
	int ok = bucket_take(&b->tokens, &b->last_ns, now, q->rate_Bps, q->burst_bytes, len, len);
	__u64 tokens = b->tokens;
	bpf_spin_unlock(&b->lock);
	if (!ok)
		return RATE_DROP;
	/* backlog (burst - tokens, bytes x NSEC) over ecn_ns of drain time (ns x bytes/s:
	 * the same unit); the driver keeps ecn_ns x rate below burst x NSEC, or SP_ECN_OFF */
	if (q->ecn_ns != SP_ECN_OFF && q->burst_bytes * NSEC - tokens > q->ecn_ns * q->rate_Bps)
		return RATE_MARK;
	return RATE_PASS;
}

/* Room in a capped lane's queue for one more packet (struct sp_lane_cap)? */
static __always_inline int lane_room(__u32 lane, __u32 cpu)
{
	struct sp_lane_cap *q = bpf_map_lookup_elem(&lane_cap, &lane);
	if (!q || !q->rate_pps)
		return 1;
	__u64 *full = bpf_map_lookup_elem(&cpumap_full, &cpu);
	__u64 events = full ? READ_ONCE(*full) : 0;
	__u64 now = bpf_ktime_get_ns();
	bpf_spin_lock(&q->lock);
	__u64 floor = q->max_pps / 16 + 1;
	if (events != q->events) {
		/* the queue overflowed at this rate: the CPU drains less; back off */
		q->events = events;
		__u64 r = q->rate_pps - q->rate_pps / 4;
		q->rate_pps = r > floor ? r : floor;
		q->tokens = 0;
		q->last_ns = now;
	}
	int ok = bucket_take(&q->tokens, &q->last_ns, now, q->rate_pps, q->burst, 1, 1);
	if (ok && q->tokens + NSEC >= q->burst * NSEC && q->rate_pps < q->max_pps) {
		/* slack: the bucket stays full, so the lane may take more */
		__u64 r = q->rate_pps + q->max_pps / 64 + 1;
		q->rate_pps = r < q->max_pps ? r : q->max_pps;
	}
	bpf_spin_unlock(&q->lock);
	return ok;
}

/* The egress budget (struct sp_egress): may a frame of this lane go out now? Lane l
 * needs its reserve to stay in the bucket after it. */
static __always_inline int egress_ok(__u32 lane, __u64 len)
{
	__u32 zero = 0;
	struct sp_egress *e = bpf_map_lookup_elem(&egress, &zero);
	if (!e || !e->rate_Bps || lane >= SP_MAX_LANES)
		return 1;
	__u64 now = bpf_ktime_get_ns();
	bpf_spin_lock(&e->lock);
	int ok = bucket_take(&e->tokens, &e->last_ns, now, e->rate_Bps, e->burst_bytes, len + e->reserve[lane], len);
	bpf_spin_unlock(&e->lock);
	return ok;
}

static __always_inline void add(struct sp_counter *c, __u64 len, int verdict, int alt_sent, int dropped,
				int marked)
{
	c->packets++;
	if (marked)
		c->ecn++;
	c->bytes += len;
	if (alt_sent)
		c->alt++;
	if (dropped)
		c->drop_rate++;
	if (verdict == XDP_REDIRECT)
		c->steered++;
	if (verdict == XDP_PASS)
		c->passed++;
}

static __always_inline void merge(void *map, __u32 idx, struct sp_counter *p)
{
	struct sp_counter *c = bpf_map_lookup_elem(map, &idx);
	if (!c)
		return;
	c->packets += p->packets;
	c->bytes += p->bytes;
	c->alt += p->alt;
	c->drop_rate += p->drop_rate;
	c->steered += p->steered;
	c->passed += p->passed;
	c->ecn += p->ecn;
}

/* Add a cache slot's pending counts to the statistics of the decision they belong to. */
static __always_inline void flush(struct sp_flow_val *v, struct sp_counter *p)
{
	if (!p->packets)
		return;
	merge(&rule_stats, v->rule, p);
	merge(&lane_stats, (__u32)v->rr_path * SP_MAX_LANES + v->lane, p);
	merge(&slice_stats, v->slice_id, p);
	__builtin_memset(p, 0, sizeof(*p));
}

static __always_inline void global_inc(__u32 idx)
{
	__u64 *v = bpf_map_lookup_elem(&global_stats, &idx);
	if (v)
		(*v)++;
}

/* Per-stage cost (bench/xdp_cost.py): built with -DSP_STAGE=n the program returns
 * XDP_PASS once stage n is done: 1 parse, 2 + flow cache / classify, 3 + policing,
 * 4 + steering decision; the full program (5) also counts. */
#ifndef SP_STAGE
#define SP_STAGE 5
#endif
#define STAGE_DONE(n)                  \
	do {                           \
		if (SP_STAGE <= (n))   \
			return XDP_PASS; \
	} while (0)
/* At a cut, what the stage produced for the next one must still be computed: an empty
 * asm reading it (no instruction), else the compiler drops the work (the key words) and
 * the next stage is charged for it. */
#define STAGE_KEEP(n, x)                               \
	do {                                           \
		if (SP_STAGE <= (n))                   \
			asm volatile("" : : "r"(x));   \
	} while (0)

/* Seed 001 Algorithm 1: a prioritised lane whose CPU is not overloaded (and whose queue
 * has room) -> cpumap redirect to its CPU; otherwise rewrite for the alt node and
 * XDP_TX. Sets *alt_sent when it did the latter. */
static __always_inline int steer(struct xdp_md *ctx, __u32 lane, __u32 rule, __u32 flags, __u64 ip1_off,
				 __u64 l4_1_off, int *alt_sent)
{
	struct sp_lane_cfg *lc = bpf_map_lookup_elem(&lane_cfg, &lane);
	int prio = lc && !(lc->flags & SP_LANE_ALT) && !(rule == SP_MAX_RULES && (flags & SP_CFG_MISS_TO_ALT));
	if (prio) {
		__u32 cpu = lc->cpu;
		__u32 *over = bpf_map_lookup_elem(&overload, &cpu);
		if (over && *over)
			prio = 0;
		else if ((lc->flags & SP_LANE_CAPPED) && !lane_room(lane, cpu)) {
			prio = 0; /* the lane's queue is full: the overflow goes to alt */
			global_inc(SP_G_OVERFLOW);
		}
	}
	if (prio)
		return lc->flags & SP_LANE_STEER ? bpf_redirect_map(&cpu_map, lc->cpu, XDP_PASS) : XDP_PASS;
	if (to_alt(ctx, ip1_off, l4_1_off) == 0) {
		*alt_sent = 1;
		return XDP_TX;
	}
	global_inc(SP_G_TX_NO_ALT);
	return XDP_PASS;
}

/* The whole pipeline, for every packet the hot path in sliceportal_xdp leaves to it
 * (anything but a fast-parsed cache hit of an unlimited slice with no budget and no
 * recording). A global function: verified once, and its register pressure stays out of
 * the hot path. */
__attribute__((noinline)) int pipeline(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	__u64 len = end - data;
	struct flow f; /* parse()'s output and classify()'s input */
	struct fkey k;
	struct decision d;
	struct sp_cache_slot *c = NULL;
	__u32 zero = 0, ip1_off = OFF_IP1, l4_1_off = OFF_L4_1, ipn_off = 0;
	__u32 rule = SP_MAX_RULES, aflags = 0, slice = 0, lane = 0, path = 0;
	int verdict = XDP_PASS, parsed = 0, alt_sent = 0, dropped = 0, marked = 0, mark = 0;

	struct sp_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return XDP_PASS;
	__u32 flags = cfg->flags;

	if (parse_fast(data, end, &k, &ipn_off) != PARSE_OK) {
		__builtin_memset(&f, 0, sizeof(f));
		int r = parse(ctx, &f);
		if (r != PARSE_OK) {
			global_inc(r == PARSE_MALFORMED ? SP_G_MALFORMED : SP_G_UNPARSED);
			goto out; /* the default path: the local stack decides */
		}
		__builtin_memcpy(&k, &f, sizeof(k));
		ip1_off = f.ip1_off;
		l4_1_off = f.l4_1_off;
		ipn_off = f.ipn_off;
	}
	parsed = 1;
	STAGE_DONE(1);

	__u32 gen = READ_ONCE(cfg->generation);
	if (!(flags & SP_CFG_NO_CACHE)) {
		__u32 idx = flow_slot(&k);
		c = bpf_map_lookup_elem(&flow_cache, &idx);
	}
	if (c && c->val.generation == gen && same_key(&c->key, &k)) {
		rule = c->val.rule;
		aflags = c->val.flags;
		slice = c->val.slice_id;
		lane = c->val.lane;
		path = c->val.rr_path;
	} else {
		__builtin_memcpy(&f, &k, sizeof(k));
		classify(&f, &d, gen & 1);
		rule = d.rule;
		aflags = d.flags;
		slice = d.slice_id;
		lane = d.lane;
		path = d.rr_path;
		if (c) {
			flush(&c->val, &c->pending); /* the slot changes hands: settle its counts */
			__builtin_memcpy(&c->key, &k, sizeof(k));
			c->val.generation = gen;
			c->val.rule = rule;
			c->val.flags = aflags;
			c->val.slice_id = slice;
			c->val.lane = lane;
			c->val.rr_path = path;
		}
	}
	STAGE_DONE(2);

	/* policing, skipped by flags when the slice has no limit and no budget is set */
	if (aflags & SP_ACT_LIMITED) {
		__u32 sid = slice;
		struct sp_slice_qos *qos = gen & 1 ? bpf_map_lookup_elem(&qos_b, &sid) : bpf_map_lookup_elem(&qos_a, &sid);
		int rate = rate_ok(sid, qos, len);
		if (rate == RATE_DROP) {
			verdict = XDP_DROP;
			dropped = 1;
			goto account;
		}
		mark = rate == RATE_MARK;
	}
	if ((flags & SP_CFG_EGRESS) && !egress_ok(lane, len)) {
		verdict = XDP_DROP;
		dropped = 1;
		goto account;
	}
	if (mark)
		marked = ecn_mark(ctx, ipn_off); /* before the alt rewrite: both fix the checksum incrementally */
	STAGE_DONE(3);

	verdict = steer(ctx, lane, rule, flags, ip1_off, l4_1_off, &alt_sent);
	STAGE_DONE(4);

account:
	if (c) {
		add(&c->pending, len, verdict, alt_sent, dropped, marked);
	} else {
		struct sp_counter one = {};
		struct sp_flow_val v = { .rule = rule, .slice_id = slice, .lane = lane, .rr_path = path };
		add(&one, len, verdict, alt_sent, dropped, marked);
		flush(&v, &one);
	}
out:
	if (flags & SP_CFG_RECORD_LAST) {
		struct sp_last *l = bpf_map_lookup_elem(&last, &zero);
		if (parsed)
			__builtin_memcpy(&f, &k, sizeof(k)); /* else: what parse() got to */
		if (l) {
			l->rule = rule;
			l->slice_id = slice;
			l->lane = lane;
			l->rr_path = path;
			l->verdict = verdict;
			l->parsed = parsed;
			l->src_ip = bpf_ntohl(f.src_ip);
			l->dst_ip = bpf_ntohl(f.dst_ip);
			l->vni = f.vni;
			l->teid = f.teid;
			l->vlan = f.vlan;
			l->dst_port = f.dst_port;
			l->dscp = f.dscp;
			l->present = f.present;
		}
	}
	return verdict;
}

/* The hot path: a fast-parsed packet whose flow-cache slot holds its key and a
 * decision of the live generation, for a slice without a rate limit, with no egress
 * budget and no recording: exactly what pipeline() does for it, minus its bookkeeping.
 * Anything else goes to pipeline() before any side effect. */
SEC("xdp")
int sliceportal_xdp(struct xdp_md *ctx)
{
	void *data = (void *)(long)ctx->data;
	void *end = (void *)(long)ctx->data_end;
	struct fkey k;
	__u32 zero = 0, ipn_off;
	int alt_sent = 0;

	struct sp_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!cfg)
		return XDP_PASS;
	__u32 flags = cfg->flags;
	if (flags & (SP_CFG_NO_CACHE | SP_CFG_EGRESS | SP_CFG_RECORD_LAST))
		return pipeline(ctx);
	if (parse_fast(data, end, &k, &ipn_off) != PARSE_OK)
		return pipeline(ctx);
	STAGE_KEEP(1, k.w0);
	STAGE_KEEP(1, k.w1);
	STAGE_KEEP(1, k.w2);
	STAGE_DONE(1);

	__u32 idx = flow_slot(&k);
	struct sp_cache_slot *c = bpf_map_lookup_elem(&flow_cache, &idx);
	if (!c || c->val.generation != READ_ONCE(cfg->generation) || !same_key(&c->key, &k) ||
	    (c->val.flags & SP_ACT_LIMITED))
		return pipeline(ctx);
	STAGE_DONE(2);
	STAGE_DONE(3); /* no policing: the slice is unlimited, no budget is set */

	int verdict = steer(ctx, c->val.lane, c->val.rule, flags, OFF_IP1, OFF_L4_1, &alt_sent);
	STAGE_DONE(4);
	add(&c->pending, end - data, verdict, alt_sent, 0, 0);
	return verdict;
}

/* Overload signal: frames the cpumap could not queue for a CPU (its kthread is behind).
 * tp_btf arguments of xdp_cpumap_enqueue: map_id, processed, drops, to_cpu. */
SEC("tp_btf/xdp_cpumap_enqueue")
int sliceportal_cpumap_enqueue(unsigned long long *ctx)
{
	__u32 zero = 0;
	__u32 map_id = ctx[0], drops = ctx[2], cpu = ctx[3];
	struct sp_config *cfg = bpf_map_lookup_elem(&config, &zero);
	if (!drops || !cfg || map_id != cfg->cpu_map_id)
		return 0;
	__u64 *v = bpf_map_lookup_elem(&cpumap_drops, &cpu);
	if (v)
		*v += drops;
	__u64 *e = bpf_map_lookup_elem(&cpumap_full, &cpu);
	if (e)
		__sync_fetch_and_add(e, 1); /* capped lanes on this CPU back off (lane_room) */
	return 0;
}

/* Attached to the veth peer of the data-plane interface (driver option tx_peer): veth
 * delivers XDP_TX frames only to a peer that runs an XDP program itself. */
SEC("xdp")
int sliceportal_peer_pass(struct xdp_md *ctx)
{
	return XDP_PASS;
}
