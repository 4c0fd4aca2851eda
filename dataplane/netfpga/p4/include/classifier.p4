// seed 000 Algorithm 1: from a physical port, the ternary table on the innermost
// {src IP, dst IP, dst port, DSCP} sets RR / PRIO (lowest address wins); a miss takes
// PRIO = DSCP bits 2:1 and RR = source address bits 2:0; the packet goes to DMA.
// From DMA, the packet goes out of the paired physical port untouched.
// Same layout as the RTL TCAM (sp_tcam.v) and the driver's table-CLI export.
#ifndef _CLASSIFIER_P4_
#define _CLASSIFIER_P4_

control SliceClassifier(inout Parsed_packet p,
                        inout user_metadata_t user_metadata,
                        inout sume_metadata_t sume_metadata) {
    action set_queue(rr_t rr, prio_t prio, bit<8> slice_id) {
        user_metadata.rr = rr;
        user_metadata.prio = prio;
        user_metadata.slice_id = slice_id;
    }

    @defaultonly
    action algorithm1_miss() {
        user_metadata.prio = user_metadata.dscp[2:1];
        user_metadata.rr = user_metadata.src_ip[2:0];
        user_metadata.slice_id = 0;
    }

    table slice_classifier {
        key = {
            user_metadata.src_ip: ternary @name("src_ip");
            user_metadata.dst_ip: ternary @name("dst_ip");
            user_metadata.dst_port: ternary @name("dst_port");
            user_metadata.dscp: ternary @name("dscp");
        }
        actions = { set_queue; algorithm1_miss; }
        size = SLICE_CLASSIFIER_SIZE;
        default_action = algorithm1_miss;
    }

    apply {
        if ((sume_metadata.src_port & PHYS_PORTS) != 0) {
            if (user_metadata.has_ipv4 == 1) {
                slice_classifier.apply();
            } else {
                // Not classifiable (non-IPv4): the default path, as the RTL does.
                user_metadata.rr = 0;
                user_metadata.prio = 0;
            }
            sume_metadata.dst_port = sume_metadata.src_port << 1;  // nfN -> dmaN
        } else if ((sume_metadata.src_port & DMA_PORTS) != 0) {
            sume_metadata.dst_port = sume_metadata.src_port >> 1;  // dmaN -> nfN
        }
    }
}

#endif
