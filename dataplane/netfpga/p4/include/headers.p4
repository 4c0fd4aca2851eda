// Headers of the nested 5G format (seed 000 §3): outer Ethernet [VLAN] / IPv4 / UDP /
// VXLAN / inner Ethernet / IPv4 / UDP / GTP-U / innermost IPv4 / UDP|TCP.
#ifndef _HEADERS_P4_
#define _HEADERS_P4_

header ethernet_h { bit<48> dst; bit<48> src; bit<16> ether_type; }
header vlan_h     { bit<3> pcp; bit<1> dei; bit<12> vid; bit<16> ether_type; }
header ipv4_h {
    bit<4> version; bit<4> ihl; bit<6> dscp; bit<2> ecn; bit<16> total_len;
    bit<16> identification; bit<3> flags; bit<13> frag_offset; bit<8> ttl;
    bit<8> protocol; bit<16> checksum; bit<32> src; bit<32> dst;
}
header l4_ports_h { bit<16> src_port; bit<16> dst_port; }  // first 4 bytes of UDP and TCP
header udp_rest_h { bit<16> len; bit<16> checksum; }
header vxlan_h    { bit<8> flags; bit<24> reserved; bit<24> vni; bit<8> reserved2; }
header gtpu_h {
    bit<3> version; bit<1> pt; bit<1> spare; bit<1> e; bit<1> s; bit<1> pn;
    bit<8> msg_type; bit<16> msg_len; bit<32> teid;
}
header gtpu_opt_h { bit<16> seq; bit<8> npdu; bit<8> next_ext; }

struct Parsed_packet {
    ethernet_h eth;
    vlan_h     vlan;
    ipv4_h     ip_outer;
    l4_ports_h l4_outer;
    udp_rest_h udp_outer;
    vxlan_h    vxlan;
    ethernet_h eth_inner;
    ipv4_h     ip_inner;
    l4_ports_h l4_inner;
    udp_rest_h udp_inner;
    gtpu_h     gtpu;
    gtpu_opt_h gtpu_opt;
    ipv4_h     ip_ue;      // innermost (the UE's packet)
    l4_ports_h l4_ue;
}

// The classifier's key (innermost fields, whichever header level that is) and the two
// queue-selection fields seed 000 adds to the metadata.
struct user_metadata_t {
    bit<32> src_ip;
    bit<32> dst_ip;
    bit<16> dst_port;
    bit<6>  dscp;
    bit<1>  has_ipv4;
    rr_t    rr;
    prio_t  prio;
    bit<8>  slice_id;
    bit<3>  unused;
}

struct digest_data_t { bit<256> unused; }

#endif
