// Tenant of a packet (seed 002 §4.1): from the ingress port on exclusive (access) ports,
// from the VLAN ID on shared (trunk) ports. Unallocated ports and unknown VIDs drop.
#ifndef SLICING_TENANT_MAP_P4
#define SLICING_TENANT_MAP_P4

#include "headers.p4"
#include "size.p4"

control TenantMap(inout headers_t hdr, inout metadata_t meta,
                  inout standard_metadata_t standard_metadata) {
    counter(2, CounterType.packets) tenant_drops;

    action set_access_tenant(tenant_id_t tenant_id, vid_t vid) {
        meta.tenant_id = tenant_id;
        meta.tenant_vid = vid;
    }

    action set_trunk() {
        // The tenant comes from vlan_tenant below.
    }

    action drop_unallocated_port() {
        meta.drop = 1;
        tenant_drops.count(DROP_UNALLOCATED_PORT);
    }

    action set_vlan_tenant(tenant_id_t tenant_id) {
        meta.tenant_id = tenant_id;
        meta.tenant_vid = hdr.vlan.vid;
    }

    action drop_unknown_vid() {
        meta.drop = 1;
        tenant_drops.count(DROP_UNKNOWN_VID);
    }

    table port_tenant {
        key = {
            standard_metadata.ingress_port: exact @name("ingress_port");
        }
        actions = {
            set_access_tenant;
            set_trunk;
            @defaultonly drop_unallocated_port;
        }
        const default_action = drop_unallocated_port();
        size = PORT_TABLE_SIZE;
    }

    // An untagged packet on a trunk has no VID (hdr.vlan invalid): it matches no
    // entry, because every entry requires vlan_valid == 1.
    table vlan_tenant {
        key = {
            standard_metadata.ingress_port: exact @name("ingress_port");
            hdr.vlan.isValid(): exact @name("vlan_valid");
            hdr.vlan.vid: exact @name("vid");
        }
        actions = {
            set_vlan_tenant;
            @defaultonly drop_unknown_vid;
        }
        const default_action = drop_unknown_vid();
        size = VLAN_TABLE_SIZE;
    }

    apply {
        switch (port_tenant.apply().action_run) {
            set_trunk: {
                vlan_tenant.apply();
            }
        }
    }
}

#endif
