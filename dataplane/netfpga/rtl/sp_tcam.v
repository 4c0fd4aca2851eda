// Ternary TCAM of seed 000 §5.2: key = innermost {src IP, dst IP, dst port, DSCP}.
//
// Two banks of ENTRIES entries. Packets look up the active bank only; the register bus
// writes only the shadow bank (writes aimed at the active bank are refused and counted),
// and one write of ACTIVE_BANK swaps them. So a new table becomes visible to packets in a
// single cycle, never half-written: the all-or-nothing push the driver relies on.
// Entries at index >= the bank's COUNT are ignored; among the rest the lowest index wins.
// An entry matches when (key & mask) == value, so an entry whose value has a 1 where its
// mask has a 0 never matches: the driver's free slot between entries (stable slots with
// gaps, so that one rule added or removed rewrites O(1) entries; docs/netfpga.md).
//
// Register window (byte offsets, see docs/netfpga.md):
//   0x0000 ACTIVE_BANK   r/w  bit 0
//   0x0004 REFUSED       r    writes refused because they targeted the active bank
//   0x0020 + 0x10*b      bank b: +0 COUNT, +4 VERSION_LO, +8 VERSION_HI
//   0x10000 + 0x8000*b + 0x20*i + 4*w   entry i of bank b, word w:
//        w0 key src_ip, w1 key dst_ip, w2 key {dscp[21:16], dst_port[15:0]},
//        w3..w5 the same for the mask, w6 action {slice_id[23:16], lane[15:8], rr_path[7:0]}

`resetall
`timescale 1ns / 1ps
`default_nettype none

module sp_tcam #(
    // Number of entries per bank; at least 1, at most 1024 (the register window).
    parameter ENTRIES = 64,
    // Register address width of this block's window (bytes).
    parameter ADDR_W = 17
) (
    input  wire              clk,
    input  wire              rst,

    // Lookup (combinational): key in, winning entry out.
    input  wire [85:0]       lookup_key,
    output reg               lookup_hit,
    output reg  [15:0]       lookup_index,
    output reg  [23:0]       lookup_action,

    // Register bus: writes take effect next cycle; reads return data one cycle later.
    input  wire              reg_wr_en,
    input  wire [ADDR_W-1:0] reg_wr_addr,
    input  wire [31:0]       reg_wr_data,
    input  wire              reg_rd_en,
    input  wire [ADDR_W-1:0] reg_rd_addr,
    output reg  [31:0]       reg_rd_data
);

localparam KEY_W = 86;
localparam IDX_W = ENTRIES > 1 ? $clog2(ENTRIES) : 1;

initial begin
    if (ENTRIES < 1 || ENTRIES > 1024) begin
        $error("sp_tcam: ENTRIES must be in 1..1024 (got %0d)", ENTRIES);
        $finish;
    end
    if (ADDR_W != 17) begin
        $error("sp_tcam: ADDR_W must be 17 (two banks of up to 1024 entries)");
        $finish;
    end
end

reg [KEY_W-1:0] key_mem  [0:2*ENTRIES-1];
reg [KEY_W-1:0] mask_mem [0:2*ENTRIES-1];
reg [23:0]      act_mem  [0:2*ENTRIES-1];
reg [15:0]      count_reg [0:1];
reg [63:0]      version_reg [0:1];
reg             active_reg;
reg [31:0]      refused_reg;

// ---- lookup: parallel compare, lowest index wins ----------------------------------
integer i;
always @* begin
    lookup_hit = 1'b0;
    lookup_index = 16'd0;
    lookup_action = 24'd0;
    for (i = ENTRIES - 1; i >= 0; i = i - 1) begin
        if (i < {16'd0, count_reg[active_reg]} &&
            ((lookup_key & mask_mem[{active_reg, i[IDX_W-1:0]}]) == key_mem[{active_reg, i[IDX_W-1:0]}])) begin
            lookup_hit = 1'b1;
            lookup_index = i[15:0];
            lookup_action = act_mem[{active_reg, i[IDX_W-1:0]}];
        end
    end
end

// ---- window decode, the same for writes and reads ------------------------------------
// An entry address (bit 16) names its bank in bit 15 and its index in bits 14:5, a bank
// header (0x20 + 0x10*b) its bank in bit 4. Each function reads only its fields.
/* verilator lint_off UNUSEDSIGNAL */
function is_entry(input [ADDR_W-1:0] a);
    is_entry = a[16] && {22'd0, a[14:5]} < ENTRIES;
endfunction

function is_header(input [ADDR_W-1:0] a);
    is_header = a[16:6] == 11'd0 && a[5];
endfunction

function bank_of(input [ADDR_W-1:0] a);
    bank_of = a[16] ? a[15] : a[4];
endfunction

function [IDX_W:0] slot_of(input [ADDR_W-1:0] a);
    slot_of = {bank_of(a), a[IDX_W+4:5]};
endfunction
/* verilator lint_on UNUSEDSIGNAL */

// ---- register writes ----------------------------------------------------------------
wire             wr_bank = bank_of(reg_wr_addr);
wire [IDX_W:0]   wr_slot = slot_of(reg_wr_addr);
wire [2:0]       wr_word = reg_wr_addr[4:2];
wire             wr_hdr = is_header(reg_wr_addr);

always @(posedge clk) begin
    if (reg_wr_en) begin
        if (reg_wr_addr == 17'h00000) begin
            active_reg <= reg_wr_data[0];
        end else if (wr_hdr || is_entry(reg_wr_addr)) begin
            if (wr_bank == active_reg) begin
                refused_reg <= refused_reg + 32'd1;
            end else if (wr_hdr) begin
                case (reg_wr_addr[3:2])
                    2'd0: count_reg[wr_bank] <= reg_wr_data[15:0];
                    2'd1: version_reg[wr_bank][31:0] <= reg_wr_data;
                    2'd2: version_reg[wr_bank][63:32] <= reg_wr_data;
                    default: ;
                endcase
            end else begin
                case (wr_word)
                    3'd0: key_mem[wr_slot][85:54] <= reg_wr_data;
                    3'd1: key_mem[wr_slot][53:22] <= reg_wr_data;
                    3'd2: key_mem[wr_slot][21:0] <= reg_wr_data[21:0];
                    3'd3: mask_mem[wr_slot][85:54] <= reg_wr_data;
                    3'd4: mask_mem[wr_slot][53:22] <= reg_wr_data;
                    3'd5: mask_mem[wr_slot][21:0] <= reg_wr_data[21:0];
                    3'd6: act_mem[wr_slot] <= reg_wr_data[23:0];
                    default: ;
                endcase
            end
        end
    end
    if (rst) begin
        active_reg <= 1'b0;
        refused_reg <= 32'd0;
        count_reg[0] <= 16'd0;
        count_reg[1] <= 16'd0;
        version_reg[0] <= 64'd0;
        version_reg[1] <= 64'd0;
    end
end

// ---- register reads -----------------------------------------------------------------
wire             rd_bank = bank_of(reg_rd_addr);
wire [IDX_W:0]   rd_slot = slot_of(reg_rd_addr);

always @(posedge clk) begin
    if (reg_rd_en) begin
        reg_rd_data <= 32'd0;
        if (is_entry(reg_rd_addr)) begin
            case (reg_rd_addr[4:2])
                3'd0: reg_rd_data <= key_mem[rd_slot][85:54];
                3'd1: reg_rd_data <= key_mem[rd_slot][53:22];
                3'd2: reg_rd_data <= {10'd0, key_mem[rd_slot][21:0]};
                3'd3: reg_rd_data <= mask_mem[rd_slot][85:54];
                3'd4: reg_rd_data <= mask_mem[rd_slot][53:22];
                3'd5: reg_rd_data <= {10'd0, mask_mem[rd_slot][21:0]};
                3'd6: reg_rd_data <= {8'd0, act_mem[rd_slot]};
                default: ;
            endcase
        end else if (reg_rd_addr == 17'h00000) begin
            reg_rd_data <= {31'd0, active_reg};
        end else if (reg_rd_addr == 17'h00004) begin
            reg_rd_data <= refused_reg;
        end else if (is_header(reg_rd_addr)) begin
            case (reg_rd_addr[3:2])
                2'd0: reg_rd_data <= {16'd0, count_reg[rd_bank]};
                2'd1: reg_rd_data <= version_reg[rd_bank][31:0];
                2'd2: reg_rd_data <= version_reg[rd_bank][63:32];
                default: ;
            endcase
        end
    end
    if (rst) begin
        reg_rd_data <= 32'd0;
    end
end

endmodule

`resetall
