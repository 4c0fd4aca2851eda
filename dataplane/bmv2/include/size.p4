// Table and register sizes shared by the program, its P4Info and the driver's
// capacity report (the driver reads sizes back from the P4Info, not from here).
#ifndef SLICING_SIZE_P4
#define SLICING_SIZE_P4

#define PORT_TABLE_SIZE 64
#define VLAN_TABLE_SIZE 1024
#define CLASSIFIER_TABLE_SIZE 4096
#define FORWARD_TABLE_SIZE 1024
#define EGRESS_VLAN_TABLE_SIZE 64
// One vQueue / meter / counter cell per data-plane slice id (DP_SID); 0 = miss.
#define MAX_SLICES 256
// standard_metadata.priority is 3 bits: at most 8 strict-priority queues per port.
#define MAX_LANES 8
#define LANE_BITS 3
// Per slice x lane telemetry cells (#25), indexed slice_id * MAX_LANES + lane.
#define SLICE_LANES 2048
// log2 buckets of the queueing-delay histogram per slice x lane (lane_telemetry.p4).
#define DELAY_BUCKETS 32
#define DELAY_BUCKET_BITS 5
// A sojourn's 8 nibbles, each counted in the cell of its position and value (16 x 8).
#define DELAY_NIBBLE_CELLS 128
#define DELAY_NIBBLE_BITS 7

#endif
