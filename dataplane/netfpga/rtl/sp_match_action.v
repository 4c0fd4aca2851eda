// Match/action stage: seed 000 Algorithm 1 around the ternary TCAM.
//
// From a physical port: a TCAM hit gives lane (PRIO), rr_path (RR) and slice id from
// the entry; a miss takes lane = innermost DSCP bits 2:0 folded onto LANES (DSCP 2:1
// on the 4-lane prototype) and rr_path = innermost source address bits; the packet goes
// to the DMA port of the pair (nfN -> dmaN). From DMA: to the physical port of the same pair, untouched.
// Packets without a parsable innermost IPv4 header (non-IP, malformed) take the default
// path: lane 0, rr_path 0, slice 0.
//
// The decision is taken from the first beat's sideband (key held stable by the parser
// for the whole packet) and written into tuser on every beat (SUME: consumers read the
// first beat). One register stage (sp_axis_stage); ready is combinational through it.
//
// Counter window (byte offsets, 64-bit values as lo/hi words, read from the snapshot
// taken by a `snap` pulse): 0x10*i entry i {packets, bytes}; 0x4000 misses;
// 0x4010 default-path packets (no innermost IPv4); 0x4020 packets DMA -> physical.

`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "sp_defs.vh"

module sp_match_action #(
    // TCAM entries per bank (1..1024).
    parameter ENTRIES = 64,
    // Priority lanes per path: 1, 2, 4 or 8 (power of two, <= 8 as DSCP 2:0 is folded).
    parameter LANES = 4,
    // Round-robin paths: power of two, 1..256.
    parameter PATHS = 8,
    // AXI4-Stream data width in bits (multiple of 8).
    parameter DATA_W = 256,
    parameter KEEP_W = DATA_W / 8,
    parameter USER_W = `SP_TUSER_W
) (
    input  wire              clk,
    input  wire              rst,

    // Parsed packets in, with the parser's key sideband.
    input  wire [DATA_W-1:0] s_axis_tdata,
    input  wire [KEEP_W-1:0] s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    input  wire [USER_W-1:0] s_axis_tuser,
    input  wire [85:0]       s_key,
    input  wire              s_key_valid,

    // Classified packets out: dst port, rr_path, lane, slice id in tuser.
    output wire [DATA_W-1:0] m_axis_tdata,
    output wire [KEEP_W-1:0] m_axis_tkeep,
    output wire              m_axis_tvalid,
    input  wire              m_axis_tready,
    output wire              m_axis_tlast,
    output wire [USER_W-1:0] m_axis_tuser,

    input  wire              snap,

    // TCAM register window.
    input  wire              tcam_wr_en,
    input  wire [16:0]       tcam_wr_addr,
    input  wire [31:0]       tcam_wr_data,
    input  wire              tcam_rd_en,
    input  wire [16:0]       tcam_rd_addr,
    output wire [31:0]       tcam_rd_data,

    // Counter register window (read only).
    input  wire              cnt_rd_en,
    input  wire [15:0]       cnt_rd_addr,
    output reg  [31:0]       cnt_rd_data
);

localparam LANE_W = LANES > 1 ? $clog2(LANES) : 1;
localparam PATH_W = PATHS > 1 ? $clog2(PATHS) : 1;
localparam IDX_W = ENTRIES > 1 ? $clog2(ENTRIES) : 1;

initial begin
    if (LANES != 1 && LANES != 2 && LANES != 4 && LANES != 8) begin
        $error("sp_match_action: LANES must be 1, 2, 4 or 8 (got %0d)", LANES);
        $finish;
    end
    if (PATHS < 1 || PATHS > 256 || (PATHS & (PATHS - 1)) != 0) begin
        $error("sp_match_action: PATHS must be a power of two in 1..256 (got %0d)", PATHS);
        $finish;
    end
end

wire        hit;
wire [15:0] hit_index;
wire [23:0] hit_action;

sp_tcam #(.ENTRIES(ENTRIES)) tcam_inst (
    .clk(clk), .rst(rst),
    .lookup_key(s_key), .lookup_hit(hit), .lookup_index(hit_index), .lookup_action(hit_action),
    .reg_wr_en(tcam_wr_en), .reg_wr_addr(tcam_wr_addr), .reg_wr_data(tcam_wr_data),
    .reg_rd_en(tcam_rd_en), .reg_rd_addr(tcam_rd_addr), .reg_rd_data(tcam_rd_data)
);

// ---- Algorithm 1 ---------------------------------------------------------------------
wire [7:0] src_port = s_axis_tuser[`SP_SRC_PORT];
wire       from_phys = |(src_port & 8'b0101_0101);
wire       from_dma = |(src_port & 8'b1010_1010);
wire [2:0] dscp_lo = s_key[18:16];
wire [7:0] src_ip_lo = s_key[61:54];

// Folding DSCP 2:0 onto LANES lanes keeps its top LANE_W bits (Table 2: lane = p >> 1).
wire [7:0] miss_lane = LANES == 1 ? 8'd0 : {5'd0, dscp_lo >> (3 - LANE_W)};
wire [7:0] miss_path = PATHS == 1 ? 8'd0 : {{(8 - PATH_W){1'b0}}, src_ip_lo[PATH_W-1:0]};

reg [7:0]  dec_dst, dec_path, dec_lane, dec_slice;
reg        dec_hit, dec_default;
always @* begin
    dec_dst = 8'd0;
    dec_path = 8'd0;
    dec_lane = 8'd0;
    dec_slice = 8'd0;
    dec_hit = 1'b0;
    dec_default = 1'b0;
    if (from_phys) begin
        dec_dst = (src_port & 8'b0101_0101) << 1;  // nfN -> dmaN
        if (!s_key_valid) begin
            dec_default = 1'b1;
        end else if (hit) begin
            dec_hit = 1'b1;
            dec_path = hit_action[7:0] & (PATHS[7:0] - 8'd1);
            dec_lane = hit_action[15:8] & (LANES[7:0] - 8'd1);
            dec_slice = hit_action[23:16];
        end else begin
            dec_path = miss_path;
            dec_lane = miss_lane;
        end
    end else if (from_dma) begin
        dec_dst = src_port >> 1;
    end
end

// ---- register stage --------------------------------------------------------------------
reg [USER_W-1:0] dec_user;
always @* begin
    dec_user = s_axis_tuser;
    dec_user[`SP_DST_PORT] = dec_dst;
    dec_user[`SP_RR_PATH] = dec_path;
    dec_user[`SP_LANE] = dec_lane;
    dec_user[`SP_SLICE] = dec_slice;
    dec_user[`SP_HIT] = dec_hit;
    dec_user[`SP_DEFAULT] = dec_default;
    dec_user[`SP_RULE] = dec_hit ? hit_index : 16'd0;
end

wire first_reg;
sp_axis_stage #(.W(DATA_W + KEEP_W + 1 + USER_W)) stage_inst (
    .clk(clk), .rst(rst),
    .s_beat({s_axis_tdata, s_axis_tkeep, s_axis_tlast, dec_user}), .s_last(s_axis_tlast),
    .s_valid(s_axis_tvalid), .s_ready(s_axis_tready), .s_pass(1'b1), .s_first(first_reg),
    .m_beat({m_axis_tdata, m_axis_tkeep, m_axis_tlast, m_axis_tuser}),
    .m_valid(m_axis_tvalid), .m_ready(m_axis_tready)
);
wire s_fire = s_axis_tvalid && s_axis_tready;

// ---- counters -----------------------------------------------------------------------------
wire [63:0] snap_pkts [0:ENTRIES-1];
wire [63:0] snap_bytes [0:ENTRIES-1];
wire [63:0] pkt_len = {48'd0, s_axis_tuser[`SP_LEN]};
wire        count_now = s_fire && first_reg;

// One counter pair {bytes, packets} per entry index (of the active bank).
genvar g;
generate
    for (g = 0; g < ENTRIES; g = g + 1) begin : gen_hits
        wire [127:0] snap_v;
        sp_counters #(.N(2)) hit_cnt (
            .clk(clk), .rst(rst), .snap(snap),
            .en({2{count_now && dec_hit && hit_index == g}}), .inc({pkt_len, 64'd1}), .snap_value(snap_v)
        );
        assign snap_pkts[g] = snap_v[63:0];
        assign snap_bytes[g] = snap_v[127:64];
    end
endgenerate

// Packets without a hit, one counter each: to the physical port, the default path, misses
// (and their bytes).
wire        no_hit = count_now && !dec_hit;
wire        count_default = no_hit && dec_default;
wire        count_miss = no_hit && !dec_default && from_phys;
wire        count_to_phys = no_hit && !dec_default && !from_phys && from_dma;
wire [63:0] snap_miss_pkts, snap_miss_bytes, snap_default_pkts, snap_to_phys_pkts;
sp_counters #(.N(4)) other_cnt (
    .clk(clk), .rst(rst), .snap(snap),
    .en({count_to_phys, count_default, count_miss, count_miss}), .inc({64'd1, 64'd1, pkt_len, 64'd1}),
    .snap_value({snap_to_phys_pkts, snap_default_pkts, snap_miss_bytes, snap_miss_pkts})
);

wire [9:0]  rd_idx = cnt_rd_addr[13:4];
reg  [63:0] rd_word;
always @* begin
    rd_word = 64'd0;
    if (cnt_rd_addr[14]) begin
        case (cnt_rd_addr[5:4])
            2'd0: rd_word = cnt_rd_addr[3] ? snap_miss_bytes : snap_miss_pkts;
            2'd1: rd_word = snap_default_pkts;
            2'd2: rd_word = snap_to_phys_pkts;
            default: ;
        endcase
    end else if ({22'd0, rd_idx} < ENTRIES) begin
        rd_word = cnt_rd_addr[3] ? snap_bytes[rd_idx[IDX_W-1:0]] : snap_pkts[rd_idx[IDX_W-1:0]];
    end
end

always @(posedge clk) begin
    if (cnt_rd_en) begin
        cnt_rd_data <= cnt_rd_addr[2] ? rd_word[63:32] : rd_word[31:0];
    end
    if (rst) begin
        cnt_rd_data <= 32'd0;
    end
end

// Address bits below word granularity and above the window are ignored by design.
/* verilator lint_off UNUSEDSIGNAL */
wire unused_ok = &{1'b0, cnt_rd_addr[15], cnt_rd_addr[1:0], src_ip_lo};
/* verilator lint_on UNUSEDSIGNAL */

endmodule

`resetall
