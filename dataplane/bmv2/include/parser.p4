// Parser and deparser: Ethernet / 802.1Q / IPv4 / UDP 4789 / VXLAN / Ethernet / IPv4 /
// UDP 2152 / GTP-U / IPv4 (UE) / ports, with every layer optional.
#ifndef SLICING_PARSER_P4
#define SLICING_PARSER_P4

#include "headers.p4"

parser SlicingParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    state start {
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: accept;
        }
    }

    // IPv4 with options (ihl != 5) is not walked further: the options stay payload and
    // the packet is classified on its addresses alone, never rejected.
    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        transition select(hdr.ipv4.ihl, hdr.ipv4.protocol) {
            (5, PROTO_UDP): parse_udp;
            (5, PROTO_TCP): parse_l4;
            default: accept;
        }
    }

    state parse_udp {
        packet.extract(hdr.udp);
        transition select(hdr.udp.dst_port) {
            UDP_PORT_VXLAN: parse_vxlan;
            UDP_PORT_GTPU: parse_gtpu;
            default: accept;
        }
    }

    state parse_vxlan {
        packet.extract(hdr.vxlan);
        packet.extract(hdr.inner_ethernet);
        transition select(hdr.inner_ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_inner_ipv4;
            default: accept;
        }
    }

    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
        transition select(hdr.inner_ipv4.ihl, hdr.inner_ipv4.protocol) {
            (5, PROTO_UDP): parse_inner_udp;
            (5, PROTO_TCP): parse_l4;
            default: accept;
        }
    }

    state parse_inner_udp {
        packet.extract(hdr.inner_udp);
        transition select(hdr.inner_udp.dst_port) {
            UDP_PORT_GTPU: parse_gtpu;
            default: accept;
        }
    }

    state parse_gtpu {
        packet.extract(hdr.gtpu);
        transition select(hdr.gtpu.msgtype, hdr.gtpu.ex, hdr.gtpu.seq, hdr.gtpu.pn) {
            (GTPU_GPDU, 0, 0, 0): parse_ue_ipv4_version;
            (GTPU_GPDU, _, _, _): parse_gtpu_options;
            default: accept;
        }
    }

    // Extension headers (next_ext != 0) are not walked: their lengths vary and no
    // slice keys on them, so such packets are classified on the TEID only.
    state parse_gtpu_options {
        packet.extract(hdr.gtpu_options);
        transition select(hdr.gtpu_options.next_ext) {
            0: parse_ue_ipv4_version;
            default: accept;
        }
    }

    state parse_ue_ipv4_version {
        transition select(packet.lookahead<bit<4>>()) {
            4: parse_ue_ipv4;
            default: accept;
        }
    }

    state parse_ue_ipv4 {
        packet.extract(hdr.ue_ipv4);
        transition select(hdr.ue_ipv4.ihl, hdr.ue_ipv4.protocol) {
            (5, PROTO_UDP): parse_l4;
            (5, PROTO_TCP): parse_l4;
            default: accept;
        }
    }

    state parse_l4 {
        packet.extract(hdr.l4);
        transition accept;
    }
}

control SlicingDeparser(packet_out packet, in headers_t hdr) {
    apply {
        packet.emit(hdr.ethernet);
        packet.emit(hdr.vlan);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.udp);
        packet.emit(hdr.vxlan);
        packet.emit(hdr.inner_ethernet);
        packet.emit(hdr.inner_ipv4);
        packet.emit(hdr.inner_udp);
        packet.emit(hdr.gtpu);
        packet.emit(hdr.gtpu_options);
        packet.emit(hdr.ue_ipv4);
        packet.emit(hdr.l4);
    }
}

#endif
