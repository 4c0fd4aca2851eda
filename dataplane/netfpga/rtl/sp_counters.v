// N 64-bit event counters read through a snapshot: counter i adds inc[i] in every cycle
// en[i] is set; a `snap` pulse copies all of them into the snapshot the register window
// reads (an event in the snapshot's own cycle is after it). Reset clears both. Packets and
// bytes of one event are two counters with the same enable (inc 1 and the length).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module sp_counters #(
    parameter N = 2
) (
    input  wire            clk,
    input  wire            rst,
    input  wire            snap,
    input  wire [N-1:0]    en,
    // Counter i's increment at [64*i +: 64].
    input  wire [64*N-1:0] inc,
    // Counter i's snapshot at [64*i +: 64].
    output wire [64*N-1:0] snap_value
);

genvar i;
generate
    for (i = 0; i < N; i = i + 1) begin : gen_counter
        reg [63:0] count_r, snap_r;
        always @(posedge clk) begin
            count_r <= rst ? 64'd0 : en[i] ? count_r + inc[64*i +: 64] : count_r;
            snap_r <= rst ? 64'd0 : snap ? count_r : snap_r;
        end
        assign snap_value[64*i +: 64] = snap_r;
    end
endgenerate

endmodule

`resetall
