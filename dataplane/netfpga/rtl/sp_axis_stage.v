// One AXI4-Stream register stage, the pipeline stage of sp_match_action and
// sp_rate_limiter. Ready is combinational through it, so it accepts one beat per cycle and
// adds one cycle of latency.
//
// The beat travels packed (the parent packs {tdata, tkeep, tlast, tuser} or what it
// forwards, possibly with a rewritten tuser); s_last is the beat's tlast. The parent
// decides per beat from what it sees at the input: s_pass = 0 takes the beat without
// forwarding it (a packet dropped whole). s_first: the beat at the input is its packet's
// first (the parent's per-packet decisions and counters key on it).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module sp_axis_stage #(
    // Bits of a packed beat.
    parameter W = 256 + 32 + 1 + 128
) (
    input  wire         clk,
    input  wire         rst,

    input  wire [W-1:0] s_beat,
    input  wire         s_last,
    input  wire         s_valid,
    output wire         s_ready,
    input  wire         s_pass,
    output reg          s_first,

    output reg  [W-1:0] m_beat,
    output reg          m_valid,
    input  wire         m_ready
);

assign s_ready = !m_valid || m_ready;

always @(posedge clk) begin
    if (s_ready) begin
        m_valid <= s_valid && s_pass;
        m_beat <= s_beat;
    end
    if (s_valid && s_ready) begin
        s_first <= s_last;
    end
    if (rst) begin
        m_valid <= 1'b0;
        s_first <= 1'b1;
    end
end

endmodule

`resetall
