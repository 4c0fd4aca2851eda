// Headers of the nested 5G multi-tenant format (seed 000 Fig. 3) plus 802.1Q, and
// the metadata the controls pass to each other.
#ifndef SLICING_HEADERS_P4
#define SLICING_HEADERS_P4

#include "defines.p4"

header ethernet_t {
    mac_addr_t dst_addr;
    mac_addr_t src_addr;
    bit<16>    ether_type;
}

header vlan_t {
    bit<3>  pcp;
    bit<1>  dei;
    vid_t   vid;
    bit<16> ether_type;
}

// Frames docs/packets.md calls malformed for reasons other than running out of bytes
// (PacketTooShort) or a fifth GTP-U extension header (StackOutOfBounds).
error {
    IPv4BadVersion,
    IPv4BadIhl,
    IPv4BadTotalLength,
    GtpuBadVersion,
    GtpuBadExtLength,
    GtpuTooManyExt
}

header ipv4_t {
    bit<4>      version;
    bit<4>      ihl;
    bit<6>      dscp;
    bit<2>      ecn;
    bit<16>     total_len;
    bit<16>     identification;
    bit<3>      flags;
    bit<13>     frag_offset;
    bit<8>      ttl;
    bit<8>      protocol;
    bit<16>     hdr_checksum;
    ipv4_addr_t src_addr;
    ipv4_addr_t dst_addr;
}

// IPv4 options: skipped, never interpreted (docs/packets.md §2).
header ipv4_options_t {
    varbit<320> options;
}

header udp_t {
    bit<16> src_port;
    bit<16> dst_port;
    bit<16> length;
    bit<16> checksum;
}

header vxlan_t {
    bit<8>  flags;
    bit<24> reserved;
    bit<24> vni;
    bit<8>  reserved2;
}

header gtpu_t {
    bit<3>  version;
    bit<1>  pt;
    bit<1>  spare;
    bit<1>  ex;
    bit<1>  seq;
    bit<1>  pn;
    bit<8>  msgtype;
    bit<16> msglen;
    bit<32> teid;
}

// Present when any of E / S / PN is set (TS 29.281 §5.1).
header gtpu_options_t {
    bit<16> seq_num;
    bit<8>  n_pdu_num;
    bit<8>  next_ext;
}

// A GTP-U extension header (TS 29.281 §5.2): length in 4-byte units, content, and the
// next extension header type in its last byte, extracted apart so that it can be read.
header gtpu_ext_t {
    bit<8>       len;
    varbit<8144> content;  // 4 * 255 - 2 bytes at most
}

header gtpu_ext_next_t {
    bit<8> next_type;
}

// The innermost transport ports; only the ports are needed, the rest stays payload.
header l4_ports_t {
    bit<16> src_port;
    bit<16> dst_port;
}

struct headers_t {
    ethernet_t      ethernet;
    vlan_t          vlan;        // the first tag: the tenant's (seed 002)
    vlan_t          vlan2;       // QinQ: the second tag
    ipv4_t          ipv4;
    ipv4_options_t  ipv4_options;
    udp_t           udp;
    vxlan_t         vxlan;
    ethernet_t      inner_ethernet;
    ipv4_t          inner_ipv4;
    ipv4_options_t  inner_ipv4_options;
    udp_t           inner_udp;
    gtpu_t          gtpu;
    gtpu_options_t  gtpu_options;
    gtpu_ext_t      gtpu_ext1;   // up to four extension headers (docs/packets.md)
    gtpu_ext_next_t gtpu_next1;
    gtpu_ext_t      gtpu_ext2;
    gtpu_ext_next_t gtpu_next2;
    gtpu_ext_t      gtpu_ext3;
    gtpu_ext_next_t gtpu_next3;
    gtpu_ext_t      gtpu_ext4;
    gtpu_ext_next_t gtpu_next4;
    ipv4_t          ue_ipv4;
    ipv4_options_t  ue_ipv4_options;
    l4_ports_t      l4;
}

// What the classifier keys on: the innermost fields, plus validity bits so that a
// matched field never matches a packet lacking that header (RuleIR semantics).
struct flow_key_t {
    bit<1>      has_ip;
    ipv4_addr_t src_ip;
    ipv4_addr_t dst_ip;
    bit<16>     dst_port;
    bit<6>      dscp;
    bit<1>      has_vni;
    bit<24>     vni;
    bit<1>      has_teid;
    bit<32>     teid;
    bit<1>      has_vlan;
    vid_t       vlan;
}

// Parameters of queue_manage (seed 004 Listing 1) copied out of slice_qos.
struct vqueue_params_t {
    bit<32> byte_time;  // transmission time of one byte at the slice rate, ns * 2^-10
    bit<32> c_delay;    // burst (drop) limit, ns
    bit<32> m_delay;    // ECN step marking threshold, ns
}

struct metadata_t {
    flow_key_t      key;
    bit<1>          unparsed;   // not IPv4 user plane (docs/packets.md §3): not classified
    bit<32>         parse_off;  // parser: offset of the header being parsed
    tenant_id_t     tenant_id;
    vid_t           tenant_vid;
    slice_id_t      slice_id;   // DP_SID; 0 = classifier miss
    bit<32>         slice_lane; // slice_id * MAX_LANES + lane: the telemetry cells' index
    bit<1>          drop;
    bit<1>          ecn_mark;
    vqueue_params_t qm;
    bit<2>          color;
}

#endif
