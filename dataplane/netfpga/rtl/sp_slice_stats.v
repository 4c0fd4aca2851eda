// Per slice x lane telemetry of the DMA side (issue #25 item 2): what entered the
// two-level queue, what it dropped (full) and what the rate limiter dropped before it,
// what left it, and the queueing delay of what left it as count, sum, max and a log2
// histogram, so the portal's KPI collector derives throughput, loss and delay
// percentiles between two reads without the card keeping per-interval state.
//
// Events (one cycle each, from sp_two_level_queue and sp_rate_limiter; the slice id,
// lane and length come from the packet's first-beat tuser):
//   enq_ok    a packet was committed to its queue (its last beat)
//   enq_full  a packet was dropped whole because its queue had no room (its last beat)
//   rl_drop   the rate limiter dropped a packet (its first beat)
//   deq       a packet's first beat left the queue; deq_sojourn = dequeue time - enqueue
//             time of that beat in the queue's time base (clock cycles on the card)
// The packet counted is the one of slice tuser[SP_SLICE], lane tuser[SP_LANE] mod LANES;
// slice ids >= SLICES are not counted (the driver reports no delay for them).
//
// Delay histogram: bucket i counts sojourns in [2^i, 2^(i+1)) cycles, bucket 0 also 0;
// a 32-bit sojourn never passes bucket 31. The delay count is TX_PACKETS (each packet
// that left has exactly one sojourn).
//
// Snapshot without copying the table: every field group is an sp_snap_table (the first
// update of an entry after a snapshot saves the entry's old value, a read returns the saved
// value where there is one; reset clears flag vectors, never the memories), so the memories
// map to RAM on the card and every value of one read-out is the value at the SNAPSHOT
// write, consistent across entries and fields.
//
// Register window (byte offsets; entry e = slice * LANES + lane at ST_STRIDE * e; 64-bit
// values as lo/hi words, from the snapshot):
//   +0x00 ENQ_PACKETS  +0x08 ENQ_BYTES   +0x10 QUEUE_DROP_PACKETS  +0x18 QUEUE_DROP_BYTES
//   +0x20 RATE_DROP_PACKETS  +0x28 RATE_DROP_BYTES  +0x30 TX_PACKETS  +0x38 TX_BYTES
//   +0x40 DELAY_SUM (cycles)  +0x48 DELAY_MAX (cycles)  +0x100 + 8*b DELAY_BUCKET[b]
// The driver's copy (regmap.py) is checked against the ST_* localparams below by
// dataplane/netfpga/tb/test_regmap_consistency.py.

`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "sp_defs.vh"

module sp_slice_stats #(
    // Slice ids 0..SLICES-1 are counted: power of two, 2..256, SLICES * LANES <= 256
    // (the 128 KiB register window).
    parameter SLICES = 64,
    // Priority lanes (the queue's LANES): power of two, 1..8.
    parameter LANES = 4,
    parameter USER_W = `SP_TUSER_W
) (
    input  wire              clk,
    input  wire              rst,
    input  wire              snap,

    // Queue ingress: committed / dropped for lack of room, with the first beat's tuser.
    input  wire              enq_ok,
    input  wire              enq_full,
    input  wire [USER_W-1:0] enq_user,
    // Rate limiter: a dropped packet's first beat and its tuser.
    input  wire              rl_drop,
    input  wire [USER_W-1:0] rl_user,
    // Queue egress: a packet's first beat left, its tuser and sojourn.
    input  wire              deq,
    input  wire [USER_W-1:0] deq_user,
    input  wire [31:0]       deq_sojourn,

    // Register window (reads answer one cycle later).
    input  wire              cnt_rd_en,
    input  wire [16:0]       cnt_rd_addr,
    output reg  [31:0]       cnt_rd_data
);

// Window layout (mirrored in drivers/netfpga/src/sliceportal_netfpga/regmap.py).
localparam [15:0] ST_STRIDE = 16'h0200;
localparam [15:0] ST_ENQ_PACKETS = 16'h0000;
localparam [15:0] ST_ENQ_BYTES = 16'h0008;
localparam [15:0] ST_QUEUE_DROP_PACKETS = 16'h0010;
localparam [15:0] ST_QUEUE_DROP_BYTES = 16'h0018;
localparam [15:0] ST_RATE_DROP_PACKETS = 16'h0020;
localparam [15:0] ST_RATE_DROP_BYTES = 16'h0028;
localparam [15:0] ST_TX_PACKETS = 16'h0030;
localparam [15:0] ST_TX_BYTES = 16'h0038;
localparam [15:0] ST_DELAY_SUM = 16'h0040;
localparam [15:0] ST_DELAY_MAX = 16'h0048;
localparam [15:0] ST_DELAY_BUCKETS = 16'h0100;
localparam BUCKETS = 32;

localparam ENTRIES = SLICES * LANES;
localparam E_W = $clog2(ENTRIES);
localparam B_W = E_W + 5;  // bucket memory index {entry, bucket}

initial begin
    if (SLICES < 2 || SLICES > 256 || (SLICES & (SLICES - 1)) != 0) begin
        $error("sp_slice_stats: SLICES must be a power of two in 2..256 (got %0d)", SLICES);
        $finish;
    end
    if (LANES < 1 || LANES > 8 || (LANES & (LANES - 1)) != 0) begin
        $error("sp_slice_stats: LANES must be a power of two in 1..8 (got %0d)", LANES);
        $finish;
    end
    if (ENTRIES > 256) begin
        $error("sp_slice_stats: SLICES * LANES must be <= 256 (got %0d)", ENTRIES);
        $finish;
    end
end

// Only the slice, lane and length fields of a tuser are read.
/* verilator lint_off UNUSEDSIGNAL */
function [E_W-1:0] entry_of(input [USER_W-1:0] user);
    reg [15:0] e;
    begin
        e = {8'd0, user[`SP_SLICE]} * LANES[15:0] + ({8'd0, user[`SP_LANE]} & (LANES[15:0] - 16'd1));
        entry_of = e[E_W-1:0];
    end
endfunction

function tracked(input [USER_W-1:0] user);
    tracked = {24'd0, user[`SP_SLICE]} < SLICES;
endfunction
/* verilator lint_on UNUSEDSIGNAL */

function [4:0] log2_bucket(input [31:0] v);
    integer i;
    begin
        log2_bucket = 5'd0;
        for (i = 1; i < 32; i = i + 1) begin
            if (v[i]) begin
                log2_bucket = i[4:0];
            end
        end
    end
endfunction

// ---- reads: the snapshot value of one 32-bit word ---------------------------------------------
wire [7:0]     rd_entry = cnt_rd_addr[16:9];
wire [15:0]    rd_off = {7'd0, cnt_rd_addr[8:0]};
wire [E_W-1:0] rd_e = rd_entry[E_W-1:0];
wire [B_W-1:0] rd_b = {rd_e, rd_off[7:3]};

// ---- group I: queue ingress {drop bytes, drop packets, enq bytes, enq packets} --------------
wire [E_W-1:0]    in_e = entry_of(enq_user);
wire [255:0]      in_old, rd_in;
wire [63:0]       in_len = {48'd0, enq_user[`SP_LEN]};
wire [255:0]      in_new = enq_full
    ? {in_old[255:192] + in_len, in_old[191:128] + 64'd1, in_old[127:0]}
    : {in_old[255:128], in_old[127:64] + in_len, in_old[63:0] + 64'd1};
sp_snap_table #(.W(256), .DEPTH(ENTRIES)) in_table (
    .clk(clk), .rst(rst), .snap(snap),
    .upd((enq_ok || enq_full) && tracked(enq_user)), .upd_idx(in_e), .upd_old(in_old), .upd_new(in_new),
    .rd_idx(rd_e), .rd_value(rd_in)
);

// ---- group R: rate-limiter drops {bytes, packets} --------------------------------------------
wire [127:0]      rl_old, rd_rl;
sp_snap_table #(.W(128), .DEPTH(ENTRIES)) rl_table (
    .clk(clk), .rst(rst), .snap(snap),
    .upd(rl_drop && tracked(rl_user)), .upd_idx(entry_of(rl_user)), .upd_old(rl_old),
    .upd_new({rl_old[127:64] + {48'd0, rl_user[`SP_LEN]}, rl_old[63:0] + 64'd1}),
    .rd_idx(rd_e), .rd_value(rd_rl)
);

// ---- group T: egress {delay max (32), delay sum, tx bytes, tx packets} and the histogram -----
wire [E_W-1:0]    tx_e = entry_of(deq_user);
wire              tx_upd = deq && tracked(deq_user);
wire [223:0]      tx_old, rd_tx;
wire [31:0]       tx_max = deq_sojourn > tx_old[223:192] ? deq_sojourn : tx_old[223:192];
wire [223:0]      tx_new = {tx_max, tx_old[191:128] + {32'd0, deq_sojourn},
                            tx_old[127:64] + {48'd0, deq_user[`SP_LEN]}, tx_old[63:0] + 64'd1};
sp_snap_table #(.W(224), .DEPTH(ENTRIES)) tx_table (
    .clk(clk), .rst(rst), .snap(snap),
    .upd(tx_upd), .upd_idx(tx_e), .upd_old(tx_old), .upd_new(tx_new),
    .rd_idx(rd_e), .rd_value(rd_tx)
);

wire [63:0]       bk_old, rd_bk;
sp_snap_table #(.W(64), .DEPTH(ENTRIES*BUCKETS)) bk_table (
    .clk(clk), .rst(rst), .snap(snap),
    .upd(tx_upd), .upd_idx({tx_e, log2_bucket(deq_sojourn)}), .upd_old(bk_old), .upd_new(bk_old + 64'd1),
    .rd_idx(rd_b), .rd_value(rd_bk)
);

reg  [63:0]    rd_val;
always @* begin
    rd_val = 64'd0;
    if ({24'd0, rd_entry} < ENTRIES) begin
        if (rd_off >= ST_DELAY_BUCKETS) begin
            rd_val = rd_bk;
        end else begin
            case (rd_off & ~16'h0007)
                ST_ENQ_PACKETS: rd_val = rd_in[63:0];
                ST_ENQ_BYTES: rd_val = rd_in[127:64];
                ST_QUEUE_DROP_PACKETS: rd_val = rd_in[191:128];
                ST_QUEUE_DROP_BYTES: rd_val = rd_in[255:192];
                ST_RATE_DROP_PACKETS: rd_val = rd_rl[63:0];
                ST_RATE_DROP_BYTES: rd_val = rd_rl[127:64];
                ST_TX_PACKETS: rd_val = rd_tx[63:0];
                ST_TX_BYTES: rd_val = rd_tx[127:64];
                ST_DELAY_SUM: rd_val = rd_tx[191:128];
                ST_DELAY_MAX: rd_val = {32'd0, rd_tx[223:192]};
                default: ;
            endcase
        end
    end
end

always @(posedge clk) begin
    if (cnt_rd_en) begin
        cnt_rd_data <= rd_off[2] ? rd_val[63:32] : rd_val[31:0];
    end
    if (rst) begin
        cnt_rd_data <= 32'd0;
    end
end

// Sub-word address bits are ignored by design; entry bits beyond E_W are range-checked.
/* verilator lint_off UNUSEDSIGNAL */
wire unused_ok = &{1'b0, rd_off[1:0], rd_entry, rd_off[15:9], ST_STRIDE};
/* verilator lint_on UNUSEDSIGNAL */

endmodule

`resetall
