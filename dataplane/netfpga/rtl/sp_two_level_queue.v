// Two-level slicing queue of seed 000 §5.2 (Fig. 5), in front of the DMA port.
//
// Level 1: PATHS round-robin paths (tuser rr_path); level 2: LANES priority lanes per
// path (tuser lane, LANES-1 = highest). Each of the PATHS x LANES queues holds DEPTH
// beats, store-and-forward: a packet becomes visible to the scheduler only once its last
// beat is in, and a packet that does not fit whole is dropped whole (counted), so the
// ingress side never back-pressures. Egress: round robin over paths that hold a packet,
// and inside the chosen path the highest non-empty lane (strict priority), decided per
// packet.
//
// Counter window (byte offsets): queue q = rr_path * LANES + lane at 0x80*q, 64-bit
// values as lo/hi words, from the snapshot taken by a `snap` pulse:
//   +0x00 enqueued packets  +0x08 enqueued bytes  +0x10 dequeued packets
//   +0x18 dequeued bytes    +0x20 dropped packets +0x28 dropped bytes
//   +0x30 sojourn sum (cycles, first beat in to first beat out)   +0x38 sojourn max
//   +0x40 live occupancy {packets[31:16], beats[15:0]} (not snapshotted)
//
// Time base `now`: each beat is stored with the time it arrived; a packet's sojourn is the
// time its first beat leaves minus the time that beat arrived (cycles on the card; the
// simulator's real-time base in live mode, see sp_datapath). Sojourns are exact up to
// 2^32 - 1 units. The ev_* outputs report every enqueue, drop and dequeue with the
// packet's first-beat tuser (and the sojourn) for the per slice x lane telemetry
// (sp_slice_stats).

`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "sp_defs.vh"

module sp_two_level_queue #(
    // Round-robin paths (level 1): power of two, 1..256. Prototype 8, production 32.
    parameter PATHS = 8,
    // Priority lanes per path (level 2): power of two, 1..8. Prototype 4, production 8.
    parameter LANES = 4,
    // Beats each queue holds: power of two, >= 2, <= 16384.
    parameter DEPTH = 64,
    // AXI4-Stream data width in bits (multiple of 8).
    parameter DATA_W = 256,
    parameter KEEP_W = DATA_W / 8,
    parameter USER_W = `SP_TUSER_W
) (
    input  wire              clk,
    input  wire              rst,
    input  wire [31:0]       now,

    input  wire [DATA_W-1:0] s_axis_tdata,
    input  wire [KEEP_W-1:0] s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    input  wire [USER_W-1:0] s_axis_tuser,

    output wire [DATA_W-1:0] m_axis_tdata,
    output wire [KEEP_W-1:0] m_axis_tkeep,
    output wire              m_axis_tvalid,
    input  wire              m_axis_tready,
    output wire              m_axis_tlast,
    output wire [USER_W-1:0] m_axis_tuser,

    // Events: a packet committed (ev_enq) or dropped for lack of room (ev_full), on its
    // last beat, with its first beat's tuser; a packet's first beat left (ev_deq), with
    // that beat's tuser and the packet's sojourn.
    output wire              ev_enq,
    output wire              ev_full,
    output wire [USER_W-1:0] ev_in_user,
    output wire              ev_deq,
    output wire [USER_W-1:0] ev_deq_user,
    output wire [31:0]       ev_deq_sojourn,

    input  wire              snap,
    input  wire              cnt_rd_en,
    input  wire [15:0]       cnt_rd_addr,
    output reg  [31:0]       cnt_rd_data
);

localparam QUEUES = PATHS * LANES;
localparam Q_W = QUEUES > 1 ? $clog2(QUEUES) : 1;
localparam P_W = PATHS > 1 ? $clog2(PATHS) : 1;
localparam D_W = $clog2(DEPTH);
localparam A_W = Q_W + D_W;

initial begin
    if (PATHS < 1 || PATHS > 256 || (PATHS & (PATHS - 1)) != 0) begin
        $error("sp_two_level_queue: PATHS must be a power of two in 1..256 (got %0d)", PATHS);
        $finish;
    end
    if (LANES < 1 || LANES > 8 || (LANES & (LANES - 1)) != 0) begin
        $error("sp_two_level_queue: LANES must be a power of two in 1..8 (got %0d)", LANES);
        $finish;
    end
    if (DEPTH < 2 || DEPTH > 16384 || (DEPTH & (DEPTH - 1)) != 0) begin
        $error("sp_two_level_queue: DEPTH must be a power of two in 2..16384 (got %0d)", DEPTH);
        $finish;
    end
    if (QUEUES > 512) begin
        $error("sp_two_level_queue: PATHS * LANES must be <= 512 (counter window)");
        $finish;
    end
end

// ---- storage ------------------------------------------------------------------------------
reg [DATA_W-1:0] mem_data [0:QUEUES*DEPTH-1];
reg [KEEP_W-1:0] mem_keep [0:QUEUES*DEPTH-1];
reg              mem_last [0:QUEUES*DEPTH-1];
reg [USER_W-1:0] mem_user [0:QUEUES*DEPTH-1];
reg [31:0]       mem_ts   [0:QUEUES*DEPTH-1];

// Per-queue state lives in the generate block below (one writer per queue); these are
// its read views.
wire [D_W-1:0] wr_ptr [0:QUEUES-1];  // committed tail
wire [D_W-1:0] rd_ptr [0:QUEUES-1];  // head
wire [D_W:0]   used   [0:QUEUES-1];  // committed beats not yet sent
wire [15:0]    pkts   [0:QUEUES-1];  // committed packets not yet sent
wire [63:0]    snap_c [0:8*QUEUES-1];

// ---- ingress: write the packet behind the committed tail, commit on its last beat ----------
// Only the rr_path / lane fields and the low bits of the index are used.
/* verilator lint_off UNUSEDSIGNAL */
function [Q_W-1:0] queue_of(input [USER_W-1:0] user);
    reg [15:0] q;
    begin
        q = ({8'd0, user[`SP_RR_PATH]} & (PATHS[15:0] - 16'd1)) * LANES[15:0]
            + ({8'd0, user[`SP_LANE]} & (LANES[15:0] - 16'd1));
        queue_of = q[Q_W-1:0];
    end
endfunction
/* verilator lint_on UNUSEDSIGNAL */

reg           in_first;
reg [Q_W-1:0] in_q;
reg [D_W-1:0] in_ptr;
reg [D_W:0]   in_cnt;
reg           in_drop;
reg [15:0]    in_len;
reg [USER_W-1:0] in_user_reg;  // the packet's first-beat tuser

wire [Q_W-1:0] cur_q = in_first ? queue_of(s_axis_tuser) : in_q;
wire [D_W-1:0] cur_ptr = in_first ? wr_ptr[cur_q] : in_ptr;
wire [D_W:0]   cur_cnt = in_first ? {(D_W+1){1'b0}} : in_cnt;
wire           cur_drop = in_first ? 1'b0 : in_drop;
wire [15:0]    cur_len = in_first ? s_axis_tuser[`SP_LEN] : in_len;
wire [USER_W-1:0] cur_user = in_first ? s_axis_tuser : in_user_reg;
wire [D_W+1:0] after = {1'b0, used[cur_q]} + {1'b0, cur_cnt} + 1;
wire           fits = !cur_drop && after <= DEPTH[D_W+1:0];

assign s_axis_tready = 1'b1;
wire s_fire = s_axis_tvalid;
wire commit = s_fire && s_axis_tlast && fits;
wire [D_W:0] commit_beats = cur_cnt + 1;

always @(posedge clk) begin
    if (s_fire) begin
        in_first <= s_axis_tlast;
        in_q <= cur_q;
        in_len <= cur_len;
        in_user_reg <= cur_user;
        in_ptr <= cur_ptr + 1;
        in_cnt <= cur_cnt + 1;
        in_drop <= !fits;
        if (fits) begin
            mem_data[{cur_q, cur_ptr}] <= s_axis_tdata;
            mem_keep[{cur_q, cur_ptr}] <= s_axis_tkeep;
            mem_last[{cur_q, cur_ptr}] <= s_axis_tlast;
            mem_user[{cur_q, cur_ptr}] <= s_axis_tuser;
            mem_ts[{cur_q, cur_ptr}] <= now;
        end
    end
    if (rst) begin
        in_first <= 1'b1;
        in_drop <= 1'b0;
    end
end

// ---- egress: round robin over paths, strict priority inside the path --------------------------
reg           out_active;
reg           out_first;
reg [Q_W-1:0] out_q;
reg [P_W-1:0] rr_next;
wire [A_W-1:0] out_addr = {out_q, rd_ptr[out_q]};

assign m_axis_tvalid = out_active;
assign m_axis_tdata = mem_data[out_addr];
assign m_axis_tkeep = mem_keep[out_addr];
assign m_axis_tlast = mem_last[out_addr];
assign m_axis_tuser = mem_user[out_addr];
wire m_fire = m_axis_tvalid && m_axis_tready;
wire dequeue_done = m_fire && m_axis_tlast;

reg           pick_valid;
reg [Q_W-1:0] pick_q;
reg [P_W-1:0] pick_path;
integer pi, li;
reg [15:0] p_idx;
/* verilator lint_off UNUSEDSIGNAL */
reg [15:0] q_idx;
/* verilator lint_on UNUSEDSIGNAL */
// Picked in the cycle the previous packet's last beat leaves, so back-to-back packets
// leave without an idle cycle; that packet no longer counts in its queue.
always @* begin
    pick_valid = 1'b0;
    pick_q = {Q_W{1'b0}};
    pick_path = {P_W{1'b0}};
    p_idx = 16'd0;
    q_idx = 16'd0;
    for (pi = PATHS - 1; pi >= 0; pi = pi - 1) begin
        // Walk from the path after rr_next backwards so the first in RR order wins last.
        p_idx = ({{(16 - P_W){1'b0}}, rr_next} + pi[15:0]) & (PATHS[15:0] - 16'd1);
        for (li = 0; li < LANES; li = li + 1) begin
            q_idx = p_idx * LANES[15:0] + li[15:0];
            if (pkts[q_idx[Q_W-1:0]] > ((dequeue_done && out_q == q_idx[Q_W-1:0]) ? 16'd1 : 16'd0)) begin
                pick_valid = 1'b1;
                pick_q = q_idx[Q_W-1:0];
                pick_path = p_idx[P_W-1:0];
            end
        end
    end
end

always @(posedge clk) begin
    if (!out_active || dequeue_done) begin
        // A packet committed this cycle is seen from the next cycle on.
        out_active <= pick_valid;
        if (pick_valid) begin
            out_q <= pick_q;
            rr_next <= pick_path + 1;
        end
    end
    if (m_fire) begin
        out_first <= m_axis_tlast;
    end
    if (rst) begin
        out_active <= 1'b0;
        out_first <= 1'b1;
        rr_next <= {P_W{1'b0}};
    end
end

// ---- per-queue state and counters -------------------------------------------------------------
wire drop_done = s_fire && s_axis_tlast && !fits;
wire [31:0] sojourn = now - mem_ts[out_addr];
reg  [15:0] out_len;
wire [15:0] deq_len = out_first ? m_axis_tuser[`SP_LEN] : out_len;

always @(posedge clk) begin
    if (m_fire && out_first) begin
        out_len <= m_axis_tuser[`SP_LEN];
    end
end

assign ev_enq = commit;
assign ev_full = drop_done;
assign ev_in_user = cur_user;
assign ev_deq = m_fire && out_first;
assign ev_deq_user = m_axis_tuser;
assign ev_deq_sojourn = sojourn;

genvar g;
generate
    for (g = 0; g < QUEUES; g = g + 1) begin : gen_queue
        reg [D_W-1:0] wr_ptr_r, rd_ptr_r;
        reg [D_W:0]   used_r;
        reg [15:0]    pkts_r;
        reg [31:0]    max_r, snap_max_r;  // sojourn max
        wire in_here = cur_q == g[Q_W-1:0];
        wire out_here = out_q == g[Q_W-1:0];
        wire add = commit && in_here;
        wire take = m_fire && out_here;
        wire took = take && m_axis_tlast;
        wire sojourn_out = take && out_first;
        wire dropped = drop_done && in_here;

        always @(posedge clk) begin
            if (add) begin
                wr_ptr_r <= cur_ptr + 1;
            end
            if (take) begin
                rd_ptr_r <= rd_ptr_r + 1;
            end
            used_r <= used_r + (add ? commit_beats : {(D_W+1){1'b0}})
                - (take ? {{D_W{1'b0}}, 1'b1} : {(D_W+1){1'b0}});
            pkts_r <= pkts_r + (add ? 16'd1 : 16'd0) - (took ? 16'd1 : 16'd0);
            if (sojourn_out && sojourn > max_r) begin
                max_r <= sojourn;
            end
            if (snap) begin
                snap_max_r <= max_r;
            end
            if (rst) begin
                wr_ptr_r <= {D_W{1'b0}};
                rd_ptr_r <= {D_W{1'b0}};
                used_r <= {(D_W+1){1'b0}};
                pkts_r <= 16'd0;
                max_r <= 32'd0;
                snap_max_r <= 32'd0;
            end
        end

        // Counters 0..6: enqueued pkts/bytes, dequeued pkts/bytes, dropped pkts/bytes,
        // sojourn sum (7: the sojourn max above).
        wire [64*7-1:0] snap_v;
        sp_counters #(.N(7)) cnt_inst (
            .clk(clk), .rst(rst), .snap(snap),
            .en({sojourn_out, dropped, dropped, took, took, add, add}),
            .inc({{32'd0, sojourn}, {48'd0, cur_len}, 64'd1, {48'd0, deq_len}, 64'd1, {48'd0, cur_len}, 64'd1}),
            .snap_value(snap_v)
        );

        assign wr_ptr[g] = wr_ptr_r;
        assign rd_ptr[g] = rd_ptr_r;
        assign used[g] = used_r;
        assign pkts[g] = pkts_r;
        for (genvar k = 0; k < 7; k = k + 1) begin : gen_snap
            assign snap_c[8*g + k] = snap_v[64*k +: 64];
        end
        assign snap_c[8*g + 7] = {32'd0, snap_max_r};
    end
endgenerate

wire [8:0]  rd_q = cnt_rd_addr[15:7];
wire [2:0]  rd_c = cnt_rd_addr[5:3];
wire [11:0] rd_slot = {rd_q, rd_c};
always @(posedge clk) begin
    if (cnt_rd_en) begin
        cnt_rd_data <= 32'd0;
        if ({23'd0, rd_q} < QUEUES) begin
            if (cnt_rd_addr[6]) begin
                if (cnt_rd_addr[5:2] == 4'd0) begin
                    cnt_rd_data <= {pkts[rd_q[Q_W-1:0]], {(15 - D_W){1'b0}}, used[rd_q[Q_W-1:0]]};
                end
            end else begin
                cnt_rd_data <= cnt_rd_addr[2] ? snap_c[rd_slot[Q_W+2:0]][63:32] : snap_c[rd_slot[Q_W+2:0]][31:0];
            end
        end
    end
    if (rst) begin
        cnt_rd_data <= 32'd0;
    end
end

// Sub-word address bits are ignored by design.
/* verilator lint_off UNUSEDSIGNAL */
wire unused_ok = &{1'b0, cnt_rd_addr[1:0], rd_slot};
/* verilator lint_on UNUSEDSIGNAL */

endmodule

`resetall
