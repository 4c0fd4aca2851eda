// The classifier key: innermost IPv4 / L4 / DSCP of whichever encapsulation arrived,
// plus the tunnel ids and the VLAN with their validity bits.
#ifndef SLICING_FLOW_KEY_P4
#define SLICING_FLOW_KEY_P4

#include "headers.p4"

control FlowKey(in headers_t hdr, inout metadata_t meta) {
    apply {
        if (hdr.ue_ipv4.isValid()) {
            meta.key.has_ip = 1;
            meta.key.src_ip = hdr.ue_ipv4.src_addr;
            meta.key.dst_ip = hdr.ue_ipv4.dst_addr;
            meta.key.dscp = hdr.ue_ipv4.dscp;
            if (hdr.l4.isValid()) {
                meta.key.dst_port = hdr.l4.dst_port;
            }
        } else if (hdr.inner_ipv4.isValid()) {
            meta.key.has_ip = 1;
            meta.key.src_ip = hdr.inner_ipv4.src_addr;
            meta.key.dst_ip = hdr.inner_ipv4.dst_addr;
            meta.key.dscp = hdr.inner_ipv4.dscp;
            if (hdr.inner_udp.isValid()) {
                meta.key.dst_port = hdr.inner_udp.dst_port;
            } else if (hdr.l4.isValid()) {
                meta.key.dst_port = hdr.l4.dst_port;
            }
        } else if (hdr.ipv4.isValid()) {
            meta.key.has_ip = 1;
            meta.key.src_ip = hdr.ipv4.src_addr;
            meta.key.dst_ip = hdr.ipv4.dst_addr;
            meta.key.dscp = hdr.ipv4.dscp;
            if (hdr.udp.isValid()) {
                meta.key.dst_port = hdr.udp.dst_port;
            } else if (hdr.l4.isValid()) {
                meta.key.dst_port = hdr.l4.dst_port;
            }
        }
        if (hdr.vxlan.isValid()) {
            meta.key.has_vni = 1;
            meta.key.vni = hdr.vxlan.vni;
        }
        if (hdr.gtpu.isValid()) {
            meta.key.has_teid = 1;
            meta.key.teid = hdr.gtpu.teid;
        }
        if (hdr.vlan.isValid()) {
            meta.key.has_vlan = 1;
            meta.key.vlan = hdr.vlan.vid;
        }
    }
}

#endif
