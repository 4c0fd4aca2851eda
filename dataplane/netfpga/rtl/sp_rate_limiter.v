// Per-slice token-bucket rate limiter, after classification (the slice id is in tuser)
// and before the two-level queue: issue #14 item 3, the rate limit of a slice's SLA.
//
// Each slice s in 1..SLICES-1 has a bucket of `burst` bytes that fills at `rate` bytes per
// clock cycle. A packet of slice s with the bucket enabled conforms when the bucket holds
// at least its length (tuser length, bytes): it passes and takes its length out; otherwise
// the whole packet is dropped here (every beat consumed, none forwarded) and counted, and
// the bucket keeps what it had. Slice 0 (misses, the default path, host -> network
// traffic) and disabled slices are never limited.
//
// The bucket is refilled lazily, on the first beat of each of the slice's packets:
//   tokens = min(burst, tokens + min(now - last, 2^32 - 1) * rate);  last = now
// so one read-modify-write per packet, no per-cycle work per slice. The refill of an
// interval uses the rate in force when the packet that closes it arrives.
//
// Fixed point (why the widths):
//   rate   32 bits, Q8.24 bytes per cycle. 2^-24 B/cycle = 11.9 B/s = 95 bit/s at 200 MHz,
//          so a 12 Mbit/s limit is set to 8 ppm; the 8 integer bits reach 256 B/cycle
//          = 409.6 Gbit/s, above any port of the card.
//   burst  32 bits, whole bytes (a 4 GiB bucket at most).
//   tokens 56 bits, Q32.24: a full bucket of the largest burst with no rounding of the
//          fractional refill, so long runs lose nothing to truncation (rates are exact).
//   elapsed saturates at 2^32 - 1 cycles (21.5 s at 200 MHz): the 32 x 32 multiply stays
//          one DSP-cascade wide; a bucket idle for longer is credited 21.5 s of its rate,
//          which fills it unless burst > rate * 21.5 s (e.g. > 2.7 MB at 1 Mbit/s).
//
// Enabling a disabled bucket (ENABLE written 1 while 0) starts it full (tokens = burst,
// last = now). RATE and BURST writes take effect for the next packet of the slice (a
// smaller burst clips the tokens then); the bucket is not reset, so reconfiguring under
// traffic is hitless. Writes are ignored for slices >= SLICES.
//
// Register window (byte offsets, slice s at RL_STRIDE * s; 64-bit counters lo/hi words
// from the snapshot a `snap` pulse takes):
//   +0x00 RATE (rw, Q8.24 B/cycle)   +0x04 BURST (rw, bytes)   +0x08 ENABLE (rw, bit 0)
//   +0x0C TOKENS (ro, whole bytes as of the slice's last packet, live)
//   +0x10 DROP_PACKETS (ro, 64)      +0x18 DROP_BYTES (ro, 64)
//   0x8000 SLICES (ro)               0x8004 FRAC_BITS (ro)
// The driver's copy of these offsets (regmap.py) is checked against the RL_* localparams
// below by dataplane/netfpga/tb/test_regmap_consistency.py.
//
// One register stage (sp_axis_stage, as in sp_match_action): ready is combinational
// through it, so the stage accepts one beat per cycle and adds one cycle of latency.

`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "sp_defs.vh"

module sp_rate_limiter #(
    // Buckets: slice ids 1..SLICES-1 can be limited (slice 0 never is). 2..256.
    parameter SLICES = 64,
    // Fractional bits of RATE and of the token store; 24 (see the header), 8..28.
    parameter FRAC = 24,
    // AXI4-Stream data width in bits (multiple of 8).
    parameter DATA_W = 256,
    parameter KEEP_W = DATA_W / 8,
    parameter USER_W = `SP_TUSER_W
) (
    input  wire              clk,
    input  wire              rst,
    // Free-running cycle count (the datapath's CYCLES register).
    input  wire [63:0]       now,

    // Classified packets in (slice id and length in tuser).
    input  wire [DATA_W-1:0] s_axis_tdata,
    input  wire [KEEP_W-1:0] s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    input  wire [USER_W-1:0] s_axis_tuser,

    // Conforming packets out, unchanged.
    output wire [DATA_W-1:0] m_axis_tdata,
    output wire [KEEP_W-1:0] m_axis_tkeep,
    output wire              m_axis_tvalid,
    input  wire              m_axis_tready,
    output wire              m_axis_tlast,
    output wire [USER_W-1:0] m_axis_tuser,

    // A packet is dropped: one cycle on its first beat, with its tuser on s_axis_tuser
    // (the per slice x lane telemetry, sp_slice_stats).
    output wire              ev_drop,

    input  wire              snap,

    // Register window (one write or read per cycle; reads answer one cycle later).
    input  wire              cfg_wr_en,
    input  wire [15:0]       cfg_wr_addr,
    input  wire [31:0]       cfg_wr_data,
    input  wire              cfg_rd_en,
    input  wire [15:0]       cfg_rd_addr,
    output reg  [31:0]       cfg_rd_data
);

// Window layout (mirrored in drivers/netfpga/src/sliceportal_netfpga/regmap.py).
localparam [15:0] RL_STRIDE = 16'h0020;
localparam [15:0] RL_RATE = 16'h0000;
localparam [15:0] RL_BURST = 16'h0004;
localparam [15:0] RL_ENABLE = 16'h0008;
localparam [15:0] RL_TOKENS = 16'h000c;
localparam [15:0] RL_DROP_PACKETS = 16'h0010;
localparam [15:0] RL_DROP_BYTES = 16'h0018;
localparam [15:0] RL_SLICES = 16'h8000;
localparam [15:0] RL_FRAC_BITS = 16'h8004;

localparam TOK_W = 32 + FRAC;
localparam S_W = SLICES > 1 ? $clog2(SLICES) : 1;

initial begin
    if (SLICES < 2 || SLICES > 256) begin
        $error("sp_rate_limiter: SLICES must be in 2..256 (got %0d)", SLICES);
        $finish;
    end
    if (FRAC < 8 || FRAC > 28) begin
        $error("sp_rate_limiter: FRAC must be in 8..28 (got %0d)", FRAC);
        $finish;
    end
end

// ---- per-slice state (registers in the generate block below, one writer per slice) ----------
wire [31:0]      rate_mem   [0:SLICES-1];
wire [31:0]      burst_mem  [0:SLICES-1];
wire             enable_mem [0:SLICES-1];
wire [TOK_W-1:0] tokens_mem [0:SLICES-1];
wire [63:0]      last_mem   [0:SLICES-1];

// ---- verdict on a packet's first beat ------------------------------------------------------
wire [7:0]       slice = s_axis_tuser[`SP_SLICE];
wire             in_range = {24'd0, slice} < SLICES;
wire [S_W-1:0]   sid = slice[S_W-1:0];
wire             limited = slice != 8'd0 && in_range && enable_mem[sid];
wire [63:0]      elapsed = now - last_mem[sid];
wire [31:0]      elapsed_sat = |elapsed[63:32] ? 32'hffff_ffff : elapsed[31:0];
wire [63:0]      refill = {32'd0, elapsed_sat} * {32'd0, rate_mem[sid]};
wire [TOK_W-1:0] cap = {burst_mem[sid], {FRAC{1'b0}}};
wire [64:0]      sum = {{(65 - TOK_W){1'b0}}, tokens_mem[sid]} + {1'b0, refill};
wire [TOK_W-1:0] filled = sum >= {{(65 - TOK_W){1'b0}}, cap} ? cap : sum[TOK_W-1:0];
wire [TOK_W-1:0] need = {16'd0, s_axis_tuser[`SP_LEN], {FRAC{1'b0}}};
wire             conforms = filled >= need;

wire   s_fire = s_axis_tvalid && s_axis_tready;
wire   first_reg;
reg    drop_reg;  // the packet in flight is being dropped
wire   drop_now = first_reg ? (limited && !conforms) : drop_reg;

sp_axis_stage #(.W(DATA_W + KEEP_W + 1 + USER_W)) stage_inst (
    .clk(clk), .rst(rst),
    .s_beat({s_axis_tdata, s_axis_tkeep, s_axis_tlast, s_axis_tuser}), .s_last(s_axis_tlast),
    .s_valid(s_axis_tvalid), .s_ready(s_axis_tready), .s_pass(!drop_now), .s_first(first_reg),
    .m_beat({m_axis_tdata, m_axis_tkeep, m_axis_tlast, m_axis_tuser}),
    .m_valid(m_axis_tvalid), .m_ready(m_axis_tready)
);

always @(posedge clk) begin
    if (s_fire) begin
        drop_reg <= drop_now;
    end
    if (rst) begin
        drop_reg <= 1'b0;
    end
end

// ---- configuration and bucket updates ---------------------------------------------------------
wire [15:0]    wr_off = cfg_wr_addr & (RL_STRIDE - 16'd1);
wire [15:0]    wr_idx = cfg_wr_addr >> 5;
wire           wr_slice_ok = !cfg_wr_addr[15] && {16'd0, wr_idx} < SLICES;
wire [S_W-1:0] wsid = wr_idx[S_W-1:0];
wire           turn_on = cfg_wr_en && wr_slice_ok && wr_off == RL_ENABLE && cfg_wr_data[0] && !enable_mem[wsid];
wire           update = s_fire && first_reg && limited;
assign ev_drop = update && !conforms;

genvar g;
generate
    for (g = 0; g < SLICES; g = g + 1) begin : gen_bucket
        reg [31:0]      rate_r, burst_r;
        reg             enable_r;
        reg [TOK_W-1:0] tokens_r;
        reg [63:0]      last_r;
        always @(posedge clk) begin
            if (cfg_wr_en && wr_slice_ok && wsid == g) begin
                case (wr_off)
                    RL_RATE: rate_r <= cfg_wr_data;
                    RL_BURST: burst_r <= cfg_wr_data;
                    RL_ENABLE: enable_r <= cfg_wr_data[0];
                    default: ;
                endcase
            end
            if (update && sid == g) begin
                tokens_r <= conforms ? filled - need : filled;
                last_r <= now;
            end
            // After the packet's update: enabling in the same cycle wins (a full bucket).
            if (turn_on && wsid == g) begin
                tokens_r <= {burst_r, {FRAC{1'b0}}};
                last_r <= now;
            end
            if (rst) begin
                rate_r <= 32'd0;
                burst_r <= 32'd0;
                enable_r <= 1'b0;
                tokens_r <= {TOK_W{1'b0}};
                last_r <= 64'd0;
            end
        end
        assign rate_mem[g] = rate_r;
        assign burst_mem[g] = burst_r;
        assign enable_mem[g] = enable_r;
        assign tokens_mem[g] = tokens_r;
        assign last_mem[g] = last_r;
    end
endgenerate

// Drop counters {bytes, packets}: one pair per slice, read through the snapshot.
wire [63:0] snap_pkts [0:SLICES-1];
wire [63:0] snap_bytes [0:SLICES-1];
generate
    for (g = 0; g < SLICES; g = g + 1) begin : gen_drops
        wire [127:0] snap_v;
        sp_counters #(.N(2)) drop_cnt (
            .clk(clk), .rst(rst), .snap(snap),
            .en({2{update && !conforms && sid == g}}), .inc({48'd0, s_axis_tuser[`SP_LEN], 64'd1}),
            .snap_value(snap_v)
        );
        assign snap_pkts[g] = snap_v[63:0];
        assign snap_bytes[g] = snap_v[127:64];
    end
endgenerate

// ---- reads ------------------------------------------------------------------------------------
wire [15:0]    rd_off = cfg_rd_addr & (RL_STRIDE - 16'd1);
wire [15:0]    rd_idx = cfg_rd_addr >> 5;
wire [S_W-1:0] rsid = rd_idx[S_W-1:0];
reg  [31:0]    rd_word;
wire [TOK_W-1:0] rd_tokens = tokens_mem[rsid];
always @* begin
    rd_word = 32'd0;
    if (cfg_rd_addr == RL_SLICES) begin
        rd_word = SLICES;
    end else if (cfg_rd_addr == RL_FRAC_BITS) begin
        rd_word = FRAC;
    end else if (!cfg_rd_addr[15] && {16'd0, rd_idx} < SLICES) begin
        case (rd_off)
            RL_RATE: rd_word = rate_mem[rsid];
            RL_BURST: rd_word = burst_mem[rsid];
            RL_ENABLE: rd_word = {31'd0, enable_mem[rsid]};
            RL_TOKENS: rd_word = rd_tokens[TOK_W-1:FRAC];
            RL_DROP_PACKETS: rd_word = snap_pkts[rsid][31:0];
            RL_DROP_PACKETS + 16'd4: rd_word = snap_pkts[rsid][63:32];
            RL_DROP_BYTES: rd_word = snap_bytes[rsid][31:0];
            RL_DROP_BYTES + 16'd4: rd_word = snap_bytes[rsid][63:32];
            default: ;
        endcase
    end
end

always @(posedge clk) begin
    if (cfg_rd_en) begin
        cfg_rd_data <= rd_word;
    end
    if (rst) begin
        cfg_rd_data <= 32'd0;
    end
end

// Bits of the packed arithmetic that cannot be set by construction (sum < 2^65, slice ids
// beyond S_W checked through in_range) are not read.
/* verilator lint_off UNUSEDSIGNAL */
wire unused_ok = &{1'b0, sum[64:TOK_W], wr_idx[15:S_W], rd_idx[15:S_W], rd_tokens[FRAC-1:0]};
/* verilator lint_on UNUSEDSIGNAL */

endmodule

`resetall
