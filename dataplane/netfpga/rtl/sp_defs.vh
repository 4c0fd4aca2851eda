// tuser layout shared by the pipeline stages (NetFPGA SUME style, 128 bits):
// [15:0] packet length in bytes, [23:16] source port, [31:24] destination port (one-hot:
// nf0 = 0x01, dma0 = 0x02, nf1 = 0x04 ...), then the slicing metadata of seed 000 §5.2,
// and [127:96] left to the environment (the simulator stores the ingress cycle there).
`ifndef SP_DEFS_VH
`define SP_DEFS_VH
`define SP_TUSER_W 128
`define SP_LEN 15:0
`define SP_SRC_PORT 23:16
`define SP_DST_PORT 31:24
`define SP_RR_PATH 39:32
`define SP_LANE 47:40
`define SP_SLICE 55:48
`define SP_HIT 56
`define SP_DEFAULT 57
`define SP_MALFORMED 58
`define SP_RULE 79:64
`define SP_INGRESS_TS 127:96
`endif
