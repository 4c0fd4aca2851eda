// A table of DEPTH entries of W bits, read through a snapshot without copying it (each
// field group of sp_slice_stats is one).
//
// Every entry keeps a `dirty` bit, set by its first update after a snapshot, which also
// saves the entry's old value in the snapshot memory; `snap` clears the bits. A read
// returns the snapshot memory where the entry is dirty and the live memory otherwise (not
// updated since the snapshot, so live is the snapshot value). Likewise a `valid` bit per
// entry, cleared by reset, makes an entry read as zero until its first update, so reset
// clears flag vectors, never the memories: one read-modify-write per update and a flag
// clear per snapshot, so both memories map to RAM.
//
// One update per cycle: upd_old is entry upd_idx's value before it (zero until its first
// update), from which the parent computes upd_new. An update in the snapshot's own cycle is
// after it (the snapshot keeps the value before the update).

`resetall
`timescale 1ns / 1ps
`default_nettype none

module sp_snap_table #(
    parameter W = 64,
    parameter DEPTH = 256,
    parameter A_W = $clog2(DEPTH)
) (
    input  wire           clk,
    input  wire           rst,
    input  wire           snap,

    input  wire           upd,
    input  wire [A_W-1:0] upd_idx,
    output wire [W-1:0]   upd_old,
    input  wire [W-1:0]   upd_new,

    input  wire [A_W-1:0] rd_idx,
    output wire [W-1:0]   rd_value
);

reg [W-1:0]     live_reg [0:DEPTH-1];
reg [W-1:0]     snap_reg [0:DEPTH-1];
reg [DEPTH-1:0] dirty_reg;
reg [DEPTH-1:0] valid_reg;

assign upd_old = valid_reg[upd_idx] ? live_reg[upd_idx] : {W{1'b0}};
assign rd_value = dirty_reg[rd_idx] ? snap_reg[rd_idx] : valid_reg[rd_idx] ? live_reg[rd_idx] : {W{1'b0}};

always @(posedge clk) begin
    if (snap) begin
        dirty_reg <= {DEPTH{1'b0}};
    end
    if (upd) begin
        if (snap || !dirty_reg[upd_idx]) begin
            snap_reg[upd_idx] <= upd_old;
        end
        dirty_reg[upd_idx] <= 1'b1;
        valid_reg[upd_idx] <= 1'b1;
        live_reg[upd_idx] <= upd_new;
    end
    if (rst) begin
        dirty_reg <= {DEPTH{1'b0}};
        valid_reg <= {DEPTH{1'b0}};
    end
end

endmodule

`resetall
