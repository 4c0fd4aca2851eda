// Types and constants every control of slicing.p4 shares.
#ifndef SLICING_DEFINES_P4
#define SLICING_DEFINES_P4

typedef bit<48> mac_addr_t;
typedef bit<32> ipv4_addr_t;
typedef bit<9>  port_t;
typedef bit<12> vid_t;
typedef bit<8>  tenant_id_t;
typedef bit<8>  slice_id_t;

const bit<16> ETHERTYPE_IPV4 = 0x0800;
const bit<16> ETHERTYPE_VLAN = 0x8100;
const bit<8>  PROTO_TCP = 6;
const bit<8>  PROTO_UDP = 17;
const bit<16> UDP_PORT_VXLAN = 4789;
const bit<16> UDP_PORT_GTPU = 2152;
const bit<8>  GTPU_GPDU = 255;

// v1model meter colours (trTCM).
const bit<2> METER_GREEN = 0;
const bit<2> METER_YELLOW = 1;
const bit<2> METER_RED = 2;

// Index of tenant_drops: why a packet found no tenant (seed 002 §4.1).
const bit<32> DROP_UNALLOCATED_PORT = 0;
const bit<32> DROP_UNKNOWN_VID = 1;

// ECN codepoint "congestion experienced" (RFC 3168).
const bit<2> ECN_CE = 3;

#endif
