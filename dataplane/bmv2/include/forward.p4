// Tenant forwarding: a tenant's packets leave only through that tenant's ports (its
// exclusive ports, or a trunk where they are tagged with its VID). A classified packet
// with nowhere to go is counted per slice x lane as dropped for want of a route.
#ifndef SLICING_FORWARD_P4
#define SLICING_FORWARD_P4

#include "headers.p4"
#include "size.p4"

control TenantForward(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    counter(SLICE_LANES, CounterType.packets) slice_lane_unrouted;

    action forward(port_t port) {
        standard_metadata.egress_spec = port;
    }

    action drop() {
        mark_to_drop(standard_metadata);
    }

    table tenant_forward {
        key = {
            meta.tenant_id: exact @name("tenant_id");
            standard_metadata.ingress_port: exact @name("ingress_port");
        }
        actions = {
            forward;
            @defaultonly drop;
        }
        const default_action = drop();
        size = FORWARD_TABLE_SIZE;
    }

    apply {
        if (meta.drop == 1) {
            mark_to_drop(standard_metadata);
        } else if (!tenant_forward.apply().hit) {
            slice_lane_unrouted.count(meta.slice_lane);
        }
    }
}

#endif
