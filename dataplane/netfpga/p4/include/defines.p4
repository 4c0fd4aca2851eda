// Constants shared by the parser and the classifier.
#ifndef _DEFINES_P4_
#define _DEFINES_P4_

// SUME ports are one-hot: nf0 = bit 0, dma0 = bit 1, nf1 = bit 2, ...
typedef bit<8> port_t;
const port_t PHYS_PORTS = 8w0b01010101;
const port_t DMA_PORTS  = 8w0b10101010;

const bit<16> TYPE_IPV4  = 0x0800;
const bit<16> TYPE_VLAN  = 0x8100;
const bit<8>  PROTO_TCP  = 6;
const bit<8>  PROTO_UDP  = 17;
const bit<16> PORT_VXLAN = 4789;
const bit<16> PORT_GTPU  = 2152;
const bit<8>  GTP_GPDU   = 255;

// Two-level queue geometry of the prototype: 8 RR paths (3 bits) x 4 lanes (2 bits).
typedef bit<3> rr_t;
typedef bit<2> prio_t;

#endif
