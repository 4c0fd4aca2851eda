// Parser and deparser: Ethernet / 802.1Q (QinQ) / IPv4 / UDP 4789 / VXLAN / Ethernet /
// IPv4 / UDP 2152 / GTP-U (extension headers) / IPv4 (UE) / ports, every layer optional,
// exactly as docs/packets.md specifies for all three data planes.
#ifndef SLICING_PARSER_P4
#define SLICING_PARSER_P4

#include "headers.p4"

const bit<16> ETHERTYPE_QINQ = 0x88A8;

// docs/packets.md is the specification this parser implements, like the XDP and NetFPGA
// parsers: a frame it cannot take apart ends with parser_error set (malformed), one that
// is not IPv4 user plane with meta.unparsed set; neither is classified.
parser SlicingParser(packet_in packet, out headers_t hdr, inout metadata_t meta,
                     inout standard_metadata_t standard_metadata) {
    state start {
        meta.parse_off = 14;
        transition parse_ethernet;
    }

    state parse_ethernet {
        packet.extract(hdr.ethernet);
        transition select(hdr.ethernet.ether_type) {
            ETHERTYPE_VLAN: parse_vlan;
            ETHERTYPE_QINQ: parse_vlan;
            ETHERTYPE_IPV4: parse_ipv4;
            default: parse_unparsed;
        }
    }

    state parse_vlan {
        packet.extract(hdr.vlan);
        meta.parse_off = meta.parse_off + 4;
        transition select(hdr.vlan.ether_type) {
            ETHERTYPE_VLAN: parse_vlan2;
            ETHERTYPE_QINQ: parse_vlan2;
            ETHERTYPE_IPV4: parse_ipv4;
            default: parse_unparsed;
        }
    }

    state parse_vlan2 {
        packet.extract(hdr.vlan2);
        meta.parse_off = meta.parse_off + 4;
        transition select(hdr.vlan2.ether_type) {
            ETHERTYPE_IPV4: parse_ipv4;
            default: parse_unparsed;  // a third tag too
        }
    }

    // Not IPv4 user plane (ARP, IPv6, a third tag, a tag inside the tunnel, an IPv6 UE).
    state parse_unparsed {
        meta.unparsed = 1;
        transition accept;
    }

    state parse_ipv4 {
        packet.extract(hdr.ipv4);
        verify(hdr.ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.ipv4.ihl >= 5, error.IPv4BadIhl);
        packet.extract(hdr.ipv4_options, ((bit<32>)hdr.ipv4.ihl - 5) * 32);
        verify((bit<32>)hdr.ipv4.total_len >= (bit<32>)hdr.ipv4.ihl * 4 &&
               meta.parse_off + (bit<32>)hdr.ipv4.total_len <= standard_metadata.packet_length,
               error.IPv4BadTotalLength);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.ipv4.ihl * 4;
        transition select(hdr.ipv4.frag_offset, hdr.ipv4.protocol) {
            (0, PROTO_UDP): parse_udp_ports;
            (0, PROTO_TCP): parse_l4;
            default: accept;  // a later fragment or another protocol: no port
        }
    }

    // Only the ports are needed unless the port is a tunnel's (then the full UDP header).
    state parse_udp_ports {
        transition select(packet.lookahead<bit<32>>()[15:0]) {
            UDP_PORT_VXLAN: parse_vxlan;
            UDP_PORT_GTPU: parse_udp_gtpu;
            default: parse_l4;
        }
    }

    state parse_udp_gtpu {
        packet.extract(hdr.udp);
        meta.parse_off = meta.parse_off + 8;
        transition parse_gtpu;
    }

    state parse_vxlan {
        packet.extract(hdr.udp);
        packet.extract(hdr.vxlan);
        packet.extract(hdr.inner_ethernet);
        meta.parse_off = meta.parse_off + 30;
        transition select(hdr.inner_ethernet.ether_type) {
            ETHERTYPE_IPV4: parse_inner_ipv4;
            default: parse_unparsed;
        }
    }

    state parse_inner_ipv4 {
        packet.extract(hdr.inner_ipv4);
        verify(hdr.inner_ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.inner_ipv4.ihl >= 5, error.IPv4BadIhl);
        packet.extract(hdr.inner_ipv4_options, ((bit<32>)hdr.inner_ipv4.ihl - 5) * 32);
        verify((bit<32>)hdr.inner_ipv4.total_len >= (bit<32>)hdr.inner_ipv4.ihl * 4 &&
               meta.parse_off + (bit<32>)hdr.inner_ipv4.total_len <= standard_metadata.packet_length,
               error.IPv4BadTotalLength);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.inner_ipv4.ihl * 4;
        transition select(hdr.inner_ipv4.frag_offset, hdr.inner_ipv4.protocol) {
            (0, PROTO_UDP): parse_inner_udp_ports;
            (0, PROTO_TCP): parse_l4;
            default: accept;  // a later fragment or another protocol: no port
        }
    }

    state parse_inner_udp_ports {
        transition select(packet.lookahead<bit<32>>()[15:0]) {
            UDP_PORT_GTPU: parse_inner_udp;
            default: parse_l4;
        }
    }

    state parse_inner_udp {
        packet.extract(hdr.inner_udp);
        meta.parse_off = meta.parse_off + 8;
        transition parse_gtpu;
    }

    state parse_gtpu {
        packet.extract(hdr.gtpu);
        verify(hdr.gtpu.version == 1, error.GtpuBadVersion);
        meta.parse_off = meta.parse_off + 8;
        transition select(hdr.gtpu.msgtype, hdr.gtpu.ex, hdr.gtpu.seq, hdr.gtpu.pn) {
            (GTPU_GPDU, 0, 0, 0): parse_ue_ipv4_version;
            (GTPU_GPDU, _, _, _): parse_gtpu_options;
            default: accept;  // signalling: classified on the IPv4 / UDP that carries it
        }
    }

    state parse_gtpu_options {
        packet.extract(hdr.gtpu_options);
        meta.parse_off = meta.parse_off + 4;
        transition select(hdr.gtpu.ex, hdr.gtpu_options.next_ext) {
            (1, 0): parse_ue_ipv4_version;
            (1, _): parse_gtpu_ext1;
            default: parse_ue_ipv4_version;  // the next type counts only with E set
        }
    }

    // Extension headers, e.g. the PDU session container (0x85): the length byte is read
    // ahead so the variable content can be extracted, then the next type.
    state parse_gtpu_ext1 {
        verify(packet.lookahead<bit<8>>() != 0, error.GtpuBadExtLength);
        packet.extract(hdr.gtpu_ext1, (bit<32>)packet.lookahead<bit<8>>() * 32 - 16);
        packet.extract(hdr.gtpu_next1);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.gtpu_ext1.len * 4;
        transition select(hdr.gtpu_next1.next_type) {
            0: parse_ue_ipv4_version;
            default: parse_gtpu_ext2;
        }
    }
    state parse_gtpu_ext2 {
        verify(packet.lookahead<bit<8>>() != 0, error.GtpuBadExtLength);
        packet.extract(hdr.gtpu_ext2, (bit<32>)packet.lookahead<bit<8>>() * 32 - 16);
        packet.extract(hdr.gtpu_next2);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.gtpu_ext2.len * 4;
        transition select(hdr.gtpu_next2.next_type) {
            0: parse_ue_ipv4_version;
            default: parse_gtpu_ext3;
        }
    }
    state parse_gtpu_ext3 {
        verify(packet.lookahead<bit<8>>() != 0, error.GtpuBadExtLength);
        packet.extract(hdr.gtpu_ext3, (bit<32>)packet.lookahead<bit<8>>() * 32 - 16);
        packet.extract(hdr.gtpu_next3);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.gtpu_ext3.len * 4;
        transition select(hdr.gtpu_next3.next_type) {
            0: parse_ue_ipv4_version;
            default: parse_gtpu_ext4;
        }
    }
    state parse_gtpu_ext4 {
        verify(packet.lookahead<bit<8>>() != 0, error.GtpuBadExtLength);
        packet.extract(hdr.gtpu_ext4, (bit<32>)packet.lookahead<bit<8>>() * 32 - 16);
        packet.extract(hdr.gtpu_next4);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.gtpu_ext4.len * 4;
        transition select(hdr.gtpu_next4.next_type) {
            0: parse_ue_ipv4_version;
            default: parse_gtpu_too_many;
        }
    }

    state parse_gtpu_too_many {
        verify(false, error.GtpuTooManyExt);
        transition accept;
    }

    state parse_ue_ipv4_version {
        transition select(packet.lookahead<bit<4>>()) {
            4: parse_ue_ipv4;
            default: parse_unparsed;
        }
    }

    state parse_ue_ipv4 {
        packet.extract(hdr.ue_ipv4);
        verify(hdr.ue_ipv4.version == 4, error.IPv4BadVersion);
        verify(hdr.ue_ipv4.ihl >= 5, error.IPv4BadIhl);
        packet.extract(hdr.ue_ipv4_options, ((bit<32>)hdr.ue_ipv4.ihl - 5) * 32);
        verify((bit<32>)hdr.ue_ipv4.total_len >= (bit<32>)hdr.ue_ipv4.ihl * 4 &&
               meta.parse_off + (bit<32>)hdr.ue_ipv4.total_len <= standard_metadata.packet_length,
               error.IPv4BadTotalLength);
        meta.parse_off = meta.parse_off + (bit<32>)hdr.ue_ipv4.ihl * 4;
        transition select(hdr.ue_ipv4.frag_offset, hdr.ue_ipv4.protocol) {
            (0, PROTO_UDP): parse_l4;
            (0, PROTO_TCP): parse_l4;
            default: accept;  // a later fragment or another protocol: no port
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
        packet.emit(hdr.vlan2);
        packet.emit(hdr.ipv4);
        packet.emit(hdr.ipv4_options);
        packet.emit(hdr.udp);
        packet.emit(hdr.vxlan);
        packet.emit(hdr.inner_ethernet);
        packet.emit(hdr.inner_ipv4);
        packet.emit(hdr.inner_ipv4_options);
        packet.emit(hdr.inner_udp);
        packet.emit(hdr.gtpu);
        packet.emit(hdr.gtpu_options);
        packet.emit(hdr.gtpu_ext1);
        packet.emit(hdr.gtpu_next1);
        packet.emit(hdr.gtpu_ext2);
        packet.emit(hdr.gtpu_next2);
        packet.emit(hdr.gtpu_ext3);
        packet.emit(hdr.gtpu_next3);
        packet.emit(hdr.gtpu_ext4);
        packet.emit(hdr.gtpu_next4);
        packet.emit(hdr.ue_ipv4);
        packet.emit(hdr.ue_ipv4_options);
        packet.emit(hdr.l4);
    }
}

#endif
