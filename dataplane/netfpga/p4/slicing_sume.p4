// seed 000 slicing pipeline for the P4-NetFPGA SimpleSumeSwitch architecture.
// Thin top level: the parser, the classifier (ternary TCAM + Algorithm 1) and the
// deparser live under include/. The RR / PRIO metadata it sets feed the two-level queue
// in front of the DMA port (dataplane/netfpga/rtl/sp_two_level_queue.v), which replaces
// the SUME output queue of dma0; see docs/netfpga.md "Building for a real NetFPGA SUME".
#include <core.p4>
#include <sume_switch.p4>

#include "include/defines.p4"
#include "include/size.p4"
#include "include/headers.p4"
#include "include/parser.p4"
#include "include/classifier.p4"
#include "include/deparser.p4"

control TopPipe(inout Parsed_packet p,
                inout user_metadata_t user_metadata,
                inout digest_data_t digest_data,
                inout sume_metadata_t sume_metadata) {
    SliceClassifier() classifier;
    apply {
        classifier.apply(p, user_metadata, sume_metadata);
    }
}

SimpleSumeSwitch(TopParser(), TopPipe(), TopDeparser()) main;
