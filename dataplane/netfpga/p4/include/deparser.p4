// Deparser: the packet leaves exactly as it came (only metadata changed).
#ifndef _DEPARSER_P4_
#define _DEPARSER_P4_

control TopDeparser(packet_out b,
                    in Parsed_packet p,
                    in user_metadata_t user_metadata,
                    inout digest_data_t digest_data,
                    inout sume_metadata_t sume_metadata) {
    apply {
        b.emit(p.eth);
        b.emit(p.vlan);
        b.emit(p.ip_outer);
        b.emit(p.l4_outer);
        b.emit(p.udp_outer);
        b.emit(p.vxlan);
        b.emit(p.eth_inner);
        b.emit(p.ip_inner);
        b.emit(p.l4_inner);
        b.emit(p.udp_inner);
        b.emit(p.gtpu);
        b.emit(p.gtpu_opt);
        b.emit(p.ip_ue);
        b.emit(p.l4_ue);
    }
}

#endif
