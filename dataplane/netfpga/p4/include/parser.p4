// Parser: every encapsulation the RTL parser takes, the innermost fields copied into the
// user metadata as each level is reached (the last copy wins = innermost).
// Target limitation: SDNet parsers cannot loop, so each nesting level has its own
// states and GTP-U extension headers are not followed (such packets keep the GTP-U
// tunnel's own IPv4 / UDP as their key; the RTL parser does follow them).
#ifndef _PARSER_P4_
#define _PARSER_P4_

parser TopParser(packet_in b,
                 out Parsed_packet p,
                 out user_metadata_t user_metadata,
                 out digest_data_t digest_data,
                 inout sume_metadata_t sume_metadata) {
    state start {
        user_metadata = { 0, 0, 0, 0, 0, 0, 0, 0, 0 };
        digest_data.unused = 0;
        b.extract(p.eth);
        transition select(p.eth.ether_type) {
            TYPE_VLAN: parse_vlan;
            TYPE_IPV4: parse_ip_outer;
            default: accept;
        }
    }
    state parse_vlan {
        b.extract(p.vlan);
        transition select(p.vlan.ether_type) { TYPE_IPV4: parse_ip_outer; default: accept; }
    }
    state parse_ip_outer {
        b.extract(p.ip_outer);
        user_metadata.src_ip = p.ip_outer.src;
        user_metadata.dst_ip = p.ip_outer.dst;
        user_metadata.dscp = p.ip_outer.dscp;
        user_metadata.has_ipv4 = 1;
        transition select(p.ip_outer.protocol) {
            PROTO_UDP: parse_l4_outer;
            PROTO_TCP: parse_l4_outer;
            default: accept;
        }
    }
    state parse_l4_outer {
        b.extract(p.l4_outer);
        user_metadata.dst_port = p.l4_outer.dst_port;
        transition select(p.ip_outer.protocol, p.l4_outer.dst_port) {
            (PROTO_UDP, PORT_VXLAN): parse_vxlan;
            (PROTO_UDP, PORT_GTPU): parse_gtpu;
            default: accept;
        }
    }
    state parse_vxlan {
        b.extract(p.udp_outer);
        b.extract(p.vxlan);
        b.extract(p.eth_inner);
        transition select(p.eth_inner.ether_type) { TYPE_IPV4: parse_ip_inner; default: accept; }
    }
    state parse_ip_inner {
        b.extract(p.ip_inner);
        user_metadata.src_ip = p.ip_inner.src;
        user_metadata.dst_ip = p.ip_inner.dst;
        user_metadata.dscp = p.ip_inner.dscp;
        user_metadata.dst_port = 0;
        transition select(p.ip_inner.protocol) {
            PROTO_UDP: parse_l4_inner;
            PROTO_TCP: parse_l4_inner;
            default: accept;
        }
    }
    state parse_l4_inner {
        b.extract(p.l4_inner);
        user_metadata.dst_port = p.l4_inner.dst_port;
        transition select(p.ip_inner.protocol, p.l4_inner.dst_port) {
            (PROTO_UDP, PORT_GTPU): parse_gtpu_inner;
            default: accept;
        }
    }
    state parse_gtpu_inner {
        b.extract(p.udp_inner);
        transition parse_gtpu_header;
    }
    state parse_gtpu {
        b.extract(p.udp_outer);
        transition parse_gtpu_header;
    }
    state parse_gtpu_header {
        b.extract(p.gtpu);
        transition select(p.gtpu.msg_type, p.gtpu.e, p.gtpu.s, p.gtpu.pn) {
            (GTP_GPDU, 0, 0, 0): parse_ip_ue;
            (GTP_GPDU, 0, _, _): parse_gtpu_opt;
            default: accept;
        }
    }
    state parse_gtpu_opt {
        b.extract(p.gtpu_opt);
        transition parse_ip_ue;
    }
    state parse_ip_ue {
        b.extract(p.ip_ue);
        user_metadata.src_ip = p.ip_ue.src;
        user_metadata.dst_ip = p.ip_ue.dst;
        user_metadata.dscp = p.ip_ue.dscp;
        user_metadata.dst_port = 0;
        transition select(p.ip_ue.protocol) {
            PROTO_UDP: parse_l4_ue;
            PROTO_TCP: parse_l4_ue;
            default: accept;
        }
    }
    state parse_l4_ue {
        b.extract(p.l4_ue);
        user_metadata.dst_port = p.l4_ue.dst_port;
        transition accept;
    }
}

#endif
