// slicing.p4 (v1model): seed 002 table slicing with tenant VLANs and seed 004 virtual
// queues per slice, strict priority lanes through standard_metadata.priority.
// This file only sequences the controls under include/; see docs/bmv2.md.
//
//   make compile   (p4c -> compiled/slicing.json + compiled/slicing.p4info.{txtpb,bin})
//   simple_switch_grpc --priority-queues 8 ... (priority queues must be enabled at start)
#include <core.p4>
#include <v1model.p4>

#include "include/headers.p4"
#include "include/parser.p4"
#include "include/checksums.p4"
#include "include/tenant_map.p4"
#include "include/flow_key.p4"
#include "include/classifier.p4"
#include "include/vqueue.p4"
#include "include/forward.p4"
#include "include/egress_vlan.p4"
#include "include/lane_telemetry.p4"

control SlicingIngress(inout headers_t hdr, inout metadata_t meta,
                       inout standard_metadata_t standard_metadata) {
    TenantMap() tenant;
    FlowKey() flow_key;
    Classifier() classifier;
    VirtualQueue() vqueue;
    TenantForward() fwd;

    apply {
        tenant.apply(hdr, meta, standard_metadata);
        if (meta.drop == 0) {
            flow_key.apply(hdr, meta);
            classifier.apply(hdr, meta, standard_metadata);
            vqueue.apply(hdr, meta, standard_metadata);
        }
        fwd.apply(hdr, meta, standard_metadata);
    }
}

control SlicingEgress(inout headers_t hdr, inout metadata_t meta,
                      inout standard_metadata_t standard_metadata) {
    EgressVlan() vlan_tag;
    LaneTelemetry() telemetry;

    apply {
        vlan_tag.apply(hdr, meta, standard_metadata);
        telemetry.apply(hdr, meta, standard_metadata);
    }
}

V1Switch(SlicingParser(), SlicingVerifyChecksum(), SlicingIngress(), SlicingEgress(),
         SlicingComputeChecksum(), SlicingDeparser()) main;
