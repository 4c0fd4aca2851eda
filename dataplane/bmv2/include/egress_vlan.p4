// Egress (seed 002 §4.1): pop the VLAN tag on exclusive ports, push the tenant's VID on
// shared ports; count what each priority lane and each slice transmitted.
#ifndef SLICING_EGRESS_VLAN_P4
#define SLICING_EGRESS_VLAN_P4

#include "headers.p4"
#include "size.p4"

control EgressVlan(inout headers_t hdr, inout metadata_t meta,
                   inout standard_metadata_t standard_metadata) {
    counter(MAX_LANES, CounterType.packets_and_bytes) lane_tx;
    counter(MAX_SLICES, CounterType.packets_and_bytes) slice_tx;

    // The actions only choose; the header surgery is in apply because p4c's BMv2
    // backend handles conditionals in apply blocks, not everywhere inside actions.
    bit<2> vlan_op = 0;

    action push_tenant_vlan() {
        vlan_op = 1;
    }

    action pop_vlan() {
        vlan_op = 2;
    }

    table egress_vlan {
        key = {
            standard_metadata.egress_port: exact @name("egress_port");
        }
        actions = {
            push_tenant_vlan;
            pop_vlan;
            @defaultonly NoAction;
        }
        const default_action = NoAction();
        size = EGRESS_VLAN_TABLE_SIZE;
    }

    apply {
        egress_vlan.apply();
        if (vlan_op == 1 && hdr.ethernet.isValid()) {  // never tag a runt (docs/packets.md)
            if (!hdr.vlan.isValid()) {
                hdr.vlan.setValid();
                hdr.vlan.pcp = 0;
                hdr.vlan.dei = 0;
                hdr.vlan.ether_type = hdr.ethernet.ether_type;
                hdr.ethernet.ether_type = ETHERTYPE_VLAN;
            }
            hdr.vlan.vid = meta.tenant_vid;
        } else if (vlan_op == 2 && hdr.vlan.isValid()) {
            hdr.ethernet.ether_type = hdr.vlan.ether_type;
            hdr.vlan.setInvalid();
        }
        lane_tx.count((bit<32>)standard_metadata.priority);
        slice_tx.count((bit<32>)meta.slice_id);
    }
}

#endif
