// Header parser for the nested 5G format (docs/packets.md, seed 000 §3), exactly as
// docs/packets.md specifies it for all three data planes:
// Ethernet [802.1Q/802.1ad, up to two tags] / IPv4 [/ UDP 4789 / VXLAN / Ethernet / IPv4]
// [/ UDP 2152 / GTP-U [ext headers] / IPv4] / UDP|TCP. Extracts the innermost IPv4 src,
// dst, DSCP and the L4 destination port (0 when the innermost IPv4 carries neither UDP
// nor TCP, or is a non-first fragment). Every IPv4 total length is checked against the
// frame length (tuser[SP_LEN]): a packet cut inside its payload is malformed.
//
// Packets are buffered (store-and-forward) while the first HDR_BYTES bytes are captured;
// the completed capture is handed to a walker FSM that visits one header per cycle (an
// IPv4 header together with its L4 header) while the next packet is already being captured. Input stalls only on the beat that would
// complete the next window while the walker is still busy. The key and flags
// come out as a sideband held stable for the whole packet:
//   m_key = {src_ip[85:54], dst_ip[53:22], dst_port[21:6]... } see sp_tcam (key layout
//   {src_ip, dst_ip, dscp, dst_port} = bits [85:54] [53:22] [21:16] [15:0]);
//   m_key_valid: an innermost IPv4 header was found; tuser[SP_MALFORMED]: the packet is
//   truncated, has a bad IPv4 header / GTP-U header, or nests deeper than HDR_BYTES.
// Non-IPv4 and malformed packets pass unchanged (the next stage sends them to the
// default path) and are counted.

`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "sp_defs.vh"

module sp_parser #(
    // AXI4-Stream data width in bits (multiple of 8).
    parameter DATA_W = 256,
    parameter KEEP_W = DATA_W / 8,
    parameter USER_W = `SP_TUSER_W,
    // Bytes of header inspected; a multiple of KEEP_W. 192 covers the full format with
    // VLAN tags, GTP-U extension headers and some IPv4 options.
    parameter HDR_BYTES = 192,
    // Packet buffer in beats (power of two); must hold one maximum-size packet.
    parameter FIFO_BEATS = 64
) (
    input  wire              clk,
    input  wire              rst,

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
    output reg  [USER_W-1:0] m_axis_tuser,
    output wire [85:0]       m_key,
    output wire              m_key_valid,

    // Live counters.
    output reg  [63:0]       cnt_packets,
    output reg  [63:0]       cnt_malformed,
    output reg  [63:0]       cnt_non_ipv4
);

localparam HDR_BEATS = HDR_BYTES / KEEP_W;
localparam F_W = $clog2(FIFO_BEATS);
localparam B_W = $clog2(HDR_BEATS + 1);
localparam META_DEPTH = 8;

initial begin
    if (HDR_BYTES % KEEP_W != 0 || HDR_BYTES < 64 || HDR_BYTES > 1024) begin
        $error("sp_parser: HDR_BYTES must be a multiple of KEEP_W in 64..1024 (got %0d)", HDR_BYTES);
        $finish;
    end
    if (FIFO_BEATS < 2 || (FIFO_BEATS & (FIFO_BEATS - 1)) != 0) begin
        $error("sp_parser: FIFO_BEATS must be a power of two >= 2 (got %0d)", FIFO_BEATS);
        $finish;
    end
end

// ---- packet buffer -------------------------------------------------------------------------
reg [DATA_W-1:0] f_data [0:FIFO_BEATS-1];
reg [KEEP_W-1:0] f_keep [0:FIFO_BEATS-1];
reg              f_last [0:FIFO_BEATS-1];
reg [USER_W-1:0] f_user [0:FIFO_BEATS-1];
reg [F_W:0]      f_wr, f_rd;
wire             f_full = (f_wr - f_rd) == FIFO_BEATS[F_W:0];
wire             f_empty = f_wr == f_rd;

// ---- per-packet results ------------------------------------------------------------------------
reg [85:0] meta_key [0:META_DEPTH-1];
reg        meta_kv [0:META_DEPTH-1];
reg        meta_bad [0:META_DEPTH-1];
reg [3:0]  meta_wr, meta_rd;
wire       meta_full = (meta_wr - meta_rd) == 4'd8;
wire       meta_empty = meta_wr == meta_rd;

// ---- header window ---------------------------------------------------------------------------
reg [HDR_BYTES*8-1:0] cap;    // being captured from the input
reg [HDR_BYTES*8-1:0] cap_merged;
reg [HDR_BYTES*8-1:0] win;    // handed to the walker
reg [15:0]  win_len;      // bytes captured so far for the current packet
reg [B_W-1:0] in_beat;    // beat index inside the current packet, saturating at HDR_BEATS
reg         walk_busy;
reg         win_done;     // the current packet's window has been handed to the walker

wire in_window = in_beat < HDR_BEATS[B_W-1:0];
wire walk_done;
// This beat completes the window (the packet ends, or the window is full). Allowed to
// depend on tlast: an AXI4-Stream slave may wait for TVALID before raising TREADY.
wire completes = in_window && !win_done && (s_axis_tlast || in_beat == HDR_BEATS[B_W-1:0] - 1'b1);
wire walker_free = !walk_busy || walk_done;
assign s_axis_tready = !f_full && (!completes || walker_free);
wire s_fire = s_axis_tvalid && s_axis_tready;

function [15:0] popcount(input [KEEP_W-1:0] keep);
    integer n;
    begin
        popcount = 16'd0;
        for (n = 0; n < KEEP_W; n = n + 1) begin
            popcount = popcount + {15'd0, keep[n]};
        end
    end
endfunction

wire [15:0] beat_bytes = popcount(s_axis_tkeep);
wire        win_complete = s_fire && completes;

always @* begin
    cap_merged = cap;
    if (in_window) begin
        cap_merged[in_beat * DATA_W +: DATA_W] = s_axis_tdata;
    end
end
reg [15:0]  walk_len;      // bytes of the window the walker may read
reg [15:0]  cap_pkt_len;   // frame length (tuser[SP_LEN] of the first beat) being captured
reg [15:0]  walk_pkt_len;  // frame length of the packet the walker reads
wire [15:0] pkt_len_now = in_beat == {B_W{1'b0}} ? s_axis_tuser[`SP_LEN] : cap_pkt_len;

always @(posedge clk) begin
    if (s_fire) begin
        f_data[f_wr[F_W-1:0]] <= s_axis_tdata;
        f_keep[f_wr[F_W-1:0]] <= s_axis_tkeep;
        f_last[f_wr[F_W-1:0]] <= s_axis_tlast;
        f_user[f_wr[F_W-1:0]] <= s_axis_tuser;
        f_wr <= f_wr + 1'b1;
        if (in_window) begin
            cap[in_beat * DATA_W +: DATA_W] <= s_axis_tdata;
            win_len <= win_len + beat_bytes;
        end
        if (in_beat == {B_W{1'b0}}) begin
            cap_pkt_len <= s_axis_tuser[`SP_LEN];
        end
        if (s_axis_tlast) begin
            win_len <= 16'd0;
        end
        if (win_complete) begin
            win_done <= 1'b1;
            win <= cap_merged;
            walk_len <= win_len + beat_bytes;
            walk_pkt_len <= pkt_len_now;
        end
        if (s_axis_tlast) begin
            in_beat <= {B_W{1'b0}};
            win_done <= 1'b0;
        end else if (in_window) begin
            in_beat <= in_beat + 1'b1;
        end
    end
    if (rst) begin
        f_wr <= {(F_W+1){1'b0}};
        in_beat <= {B_W{1'b0}};
        win_len <= 16'd0;
        win_done <= 1'b0;
        walk_len <= 16'd0;
        cap_pkt_len <= 16'd0;
        walk_pkt_len <= 16'd0;
    end
end

// ---- walker -------------------------------------------------------------------------------------
// One header per cycle, and the cycle that reads an IPv4 header also reads the L4 header behind
// it; the Ethernet header and its EtherType are one step. The walk that ends writes its result
// in the same cycle (from the next-state values), and a new window may start the cycle after.
// A plain Ethernet / IPv4 / UDP packet thus takes two walker cycles: minimum-size frames (two
// 32-byte beats) keep up with the bus.
localparam W_ETH = 3'd0, W_IP = 3'd1, W_GTP = 3'd3, W_GTPX = 3'd4, W_DONE = 3'd5, W_TYPE = 3'd6;
reg [2:0]  w_state;
reg [15:0] off;
reg [31:0] k_src, k_dst;
reg [15:0] k_port;
reg [5:0]  k_dscp;
reg        k_ip, k_bad, k_nonip, k_l4;
reg        seen_vxlan, seen_gtp;
reg [2:0]  ext_count;
reg [1:0]  tags;          // VLAN tags walked (at most two: QinQ)

// The window and its length are passed explicitly: neither a continuous assignment nor an
// always @* block is re-evaluated on the module signals a function reads, only on its operands.
function [7:0] byte_at(input [HDR_BYTES*8-1:0] w, input [15:0] idx);
    begin
        byte_at = (idx < HDR_BYTES) ? w[idx * 8 +: 8] : 8'd0;
    end
endfunction

function [15:0] be16(input [HDR_BYTES*8-1:0] w, input [15:0] idx);
    begin
        be16 = {byte_at(w, idx), byte_at(w, idx + 16'd1)};
    end
endfunction

function [31:0] be32(input [HDR_BYTES*8-1:0] w, input [15:0] idx);
    begin
        be32 = {be16(w, idx), be16(w, idx + 16'd2)};
    end
endfunction

// Bytes [from, from+n) are in the window of ``len`` bytes (which the packet may end before).
function has(input [15:0] len, input [15:0] from, input [15:0] n);
    begin
        has = ({1'b0, from} + {1'b0, n}) <= {1'b0, len};
    end
endfunction

wire [7:0]  ip_vihl = byte_at(win, off);
wire [15:0] ip_hlen = {10'd0, ip_vihl[3:0], 2'b00};
wire [15:0] ip_tot = be16(win, off + 16'd2);
wire [7:0]  ip_tos = byte_at(win, off + 16'd1);
wire [7:0]  ip_proto = byte_at(win, off + 16'd9);
wire [15:0] frag_word = be16(win, off + 16'd6);
wire [12:0] frag_off = frag_word[12:0];
wire [15:0] l4_off = off + ip_hlen;
wire [15:0] l4_dport = be16(win, l4_off + 16'd2);
// W_ETH reads the EtherType / TPID behind the MAC addresses, W_TYPE the one at ``off``.
wire [15:0] t_off = w_state == W_ETH ? off + 16'd12 : off;
wire [15:0] t_type = be16(win, t_off);
wire [15:0] t_type2 = be16(win, t_off + 16'd4);  // behind a tag at t_off

function is_tag(input [15:0] type_or_tpid);
    begin
        is_tag = type_or_tpid == 16'h8100 || type_or_tpid == 16'h88A8;
    end
endfunction
// GTP-U flags: version [7:5], PT [4], E [2], S [1], PN [0].
wire [7:0]  gtp_flags = byte_at(win, off);
wire [7:0]  gtp_type = byte_at(win, off + 16'd1);
/* verilator lint_off UNUSEDSIGNAL */
wire unused_ok = &{1'b0, gtp_flags[4:3], frag_word[15:13], ip_tos[1:0]};
/* verilator lint_on UNUSEDSIGNAL */
wire [7:0]  gtp_next = byte_at(win, off + 16'd11);
wire [15:0] ext_len = {6'd0, byte_at(win, off), 2'b00};
wire [7:0]  ext_next = byte_at(win, off + ext_len - 16'd1);

// Next-state values of this cycle's header, and whether the walk ends with it.
reg [2:0]  n_state;
reg [15:0] n_off;
reg [31:0] n_src, n_dst;
reg [15:0] n_port;
reg [5:0]  n_dscp;
reg        n_ip, n_bad, n_nonip, n_l4, n_vxlan, n_gtp;
reg [2:0]  n_ext;
reg [1:0]  n_tags;
reg        fin, do_type;

always @* begin
    n_state = w_state;
    n_off = off;
    n_src = k_src;
    n_dst = k_dst;
    n_port = k_port;
    n_dscp = k_dscp;
    n_ip = k_ip;
    n_bad = k_bad;
    n_nonip = k_nonip;
    n_l4 = k_l4;
    n_vxlan = seen_vxlan;
    n_gtp = seen_gtp;
    n_ext = ext_count;
    n_tags = tags;
    fin = 1'b0;
    do_type = 1'b0;
    case (w_state)
        W_ETH: begin
            if (!has(walk_len, off, 16'd14)) begin
                n_bad = 1'b1;
                fin = 1'b1;
            end else begin
                do_type = 1'b1;
            end
        end
        W_TYPE: do_type = 1'b1;
        W_IP: begin
            if (seen_gtp && has(walk_len, off, 16'd1) && ip_vihl[7:4] != 4'd4) begin
                // a G-PDU carrying IPv6 (or anything but IPv4): not classified
                n_nonip = 1'b1;
                fin = 1'b1;
            end else if (!has(walk_len, off, 16'd20)) begin
                n_bad = 1'b1;
                fin = 1'b1;
            end else if (ip_vihl[7:4] != 4'd4 || ip_vihl[3:0] < 4'd5 || !has(walk_len, off, ip_hlen) ||
                         ip_tot < ip_hlen || {1'b0, off} + {1'b0, ip_tot} > {1'b0, walk_pkt_len}) begin
                n_bad = 1'b1;
                fin = 1'b1;
            end else begin
                n_ip = 1'b1;
                n_src = be32(win, off + 16'd12);
                n_dst = be32(win, off + 16'd16);
                n_dscp = ip_tos[7:2];
                n_port = 16'd0;
                n_l4 = 1'b0;
                n_off = l4_off;
                fin = 1'b1;
                if ((ip_proto == 8'd17 || ip_proto == 8'd6) && frag_off == 13'd0) begin
                    // the L4 header behind it, in the same cycle
                    if (!has(walk_len, l4_off, 16'd4)) begin
                        n_bad = 1'b1;
                    end else begin
                        n_port = l4_dport;
                        n_l4 = 1'b1;
                        if (ip_proto == 8'd17 && l4_dport == 16'd4789 && !seen_vxlan && !seen_gtp) begin
                            // UDP (8) + VXLAN (8), then the inner Ethernet frame.
                            n_vxlan = 1'b1;
                            n_off = l4_off + 16'd16;
                            if (has(walk_len, l4_off, 16'd16)) begin
                                n_state = W_ETH;
                                fin = 1'b0;
                            end else begin
                                n_bad = 1'b1;
                            end
                        end else if (ip_proto == 8'd17 && l4_dport == 16'd2152 && !seen_gtp) begin
                            n_gtp = 1'b1;
                            n_off = l4_off + 16'd8;
                            if (has(walk_len, l4_off, 16'd8)) begin
                                n_state = W_GTP;
                                fin = 1'b0;
                            end else begin
                                n_bad = 1'b1;
                            end
                        end
                    end
                end
            end
        end
        W_GTP: begin
            if (!has(walk_len, off, 16'd8) || gtp_flags[7:5] != 3'd1) begin
                n_bad = 1'b1;
                fin = 1'b1;
            end else if (gtp_type != 8'd255) begin
                // Signalling (echo, end marker): no user packet inside; the tunnel's own
                // IPv4 / UDP 2152 stays the innermost key.
                fin = 1'b1;
            end else if (gtp_flags[2:0] != 3'd0) begin
                if (!has(walk_len, off, 16'd12)) begin
                    n_bad = 1'b1;
                    fin = 1'b1;
                end else begin
                    n_off = off + 16'd12;
                    n_state = (gtp_flags[2] && gtp_next != 8'd0) ? W_GTPX : W_IP;
                end
            end else begin
                n_off = off + 16'd8;
                n_state = W_IP;
            end
        end
        W_GTPX: begin
            // Extension headers: length in 4-byte units, next type in the last byte.
            if (!has(walk_len, off, 16'd1) || ext_len == 16'd0 || !has(walk_len, off, ext_len) ||
                ext_count == 3'd4) begin
                n_bad = 1'b1;
                fin = 1'b1;
            end else begin
                n_off = off + ext_len;
                n_ext = ext_count + 3'd1;
                n_state = ext_next == 8'd0 ? W_IP : W_GTPX;
            end
        end
        default: fin = 1'b1;  // W_DONE: the result waits for room in the result FIFO
    endcase
    if (do_type) begin
        // Tags only on the outer Ethernet; a third tag or one inside the tunnel is not
        // IPv4 user plane (docs/packets.md).
        // One tag and the EtherType behind it are read in the same step, so a tagged
        // minimum-size frame walks as fast as an untagged one.
        if (is_tag(t_type) && !seen_vxlan && tags != 2'd2) begin
            n_tags = tags + 2'd1;
            if (!has(walk_len, t_off, 16'd6)) begin
                n_bad = 1'b1;
                fin = 1'b1;
            end else if (is_tag(t_type2) && tags != 2'd1) begin
                n_off = t_off + 16'd4;
                n_state = W_TYPE;
            end else if (t_type2 == 16'h0800) begin
                n_off = t_off + 16'd6;
                n_state = W_IP;
            end else begin
                n_nonip = 1'b1;
                fin = 1'b1;
            end
        end else if (t_type == 16'h0800) begin
            n_off = t_off + 16'd2;
            n_state = W_IP;
        end else begin
            n_nonip = 1'b1;
            fin = 1'b1;
        end
    end
end

assign walk_done = walk_busy && fin && !meta_full;

always @(posedge clk) begin
    if (walk_busy) begin
        w_state <= fin ? W_DONE : n_state;
        off <= n_off;
        k_src <= n_src;
        k_dst <= n_dst;
        k_port <= n_port;
        k_dscp <= n_dscp;
        k_ip <= n_ip;
        k_bad <= n_bad;
        k_nonip <= n_nonip;
        k_l4 <= n_l4;
        seen_vxlan <= n_vxlan;
        seen_gtp <= n_gtp;
        ext_count <= n_ext;
        tags <= n_tags;
        if (walk_done) begin
            walk_busy <= 1'b0;
        end
    end
    if (win_complete) begin
        walk_busy <= 1'b1;
        w_state <= W_ETH;
        off <= 16'd0;
        k_ip <= 1'b0;
        k_bad <= 1'b0;
        k_nonip <= 1'b0;
        k_l4 <= 1'b0;
        seen_vxlan <= 1'b0;
        seen_gtp <= 1'b0;
        ext_count <= 3'd0;
        tags <= 2'd0;
    end
    if (rst) begin
        walk_busy <= 1'b0;
        w_state <= W_ETH;
    end
end

// A header cut by the window end rather than the packet end ("too deep") counts as
// malformed too: the walker cannot tell what the innermost header is.
always @(posedge clk) begin
    if (walk_done) begin
        meta_key[meta_wr[2:0]] <= {n_src, n_dst, n_dscp, n_l4 ? n_port : 16'd0};
        meta_kv[meta_wr[2:0]] <= n_ip && !n_bad && !n_nonip;
        meta_bad[meta_wr[2:0]] <= n_bad;
        meta_wr <= meta_wr + 4'd1;
        cnt_packets <= cnt_packets + 64'd1;
        if (n_bad) begin
            cnt_malformed <= cnt_malformed + 64'd1;
        end else if (n_nonip || !n_ip) begin
            cnt_non_ipv4 <= cnt_non_ipv4 + 64'd1;
        end
    end
    if (rst) begin
        meta_wr <= 4'd0;
        cnt_packets <= 64'd0;
        cnt_malformed <= 64'd0;
        cnt_non_ipv4 <= 64'd0;
    end
end

// ---- output --------------------------------------------------------------------------------------
assign m_axis_tvalid = !f_empty && !meta_empty;
assign m_axis_tdata = f_data[f_rd[F_W-1:0]];
assign m_axis_tkeep = f_keep[f_rd[F_W-1:0]];
assign m_axis_tlast = f_last[f_rd[F_W-1:0]];
assign m_key = meta_key[meta_rd[2:0]];
assign m_key_valid = meta_kv[meta_rd[2:0]];
always @* begin
    m_axis_tuser = f_user[f_rd[F_W-1:0]];
    m_axis_tuser[`SP_MALFORMED] = meta_bad[meta_rd[2:0]];
end
wire m_fire = m_axis_tvalid && m_axis_tready;

always @(posedge clk) begin
    if (m_fire) begin
        f_rd <= f_rd + 1'b1;
        if (m_axis_tlast) begin
            meta_rd <= meta_rd + 4'd1;
        end
    end
    if (rst) begin
        f_rd <= {(F_W+1){1'b0}};
        meta_rd <= 4'd0;
    end
end

endmodule

`resetall
