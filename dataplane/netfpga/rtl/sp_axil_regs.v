// AXI4-Lite slave to a simple register bus: one write or one read at a time.
// A write raises reg_wr_en for one cycle; a read raises reg_rd_en and samples
// reg_rd_data one cycle later (every register block answers with that latency).
// Responses are always OKAY: unmapped addresses read as 0 and ignore writes.

`resetall
`timescale 1ns / 1ps
`default_nettype none

module sp_axil_regs #(
    // Byte address width of the register space.
    parameter ADDR_W = 20
) (
    input  wire              clk,
    input  wire              rst,

    input  wire [ADDR_W-1:0] s_axil_awaddr,
    input  wire [2:0]        s_axil_awprot,
    input  wire              s_axil_awvalid,
    output wire              s_axil_awready,
    input  wire [31:0]       s_axil_wdata,
    input  wire [3:0]        s_axil_wstrb,
    input  wire              s_axil_wvalid,
    output wire              s_axil_wready,
    output wire [1:0]        s_axil_bresp,
    output reg               s_axil_bvalid,
    input  wire              s_axil_bready,
    input  wire [ADDR_W-1:0] s_axil_araddr,
    input  wire [2:0]        s_axil_arprot,
    input  wire              s_axil_arvalid,
    output wire              s_axil_arready,
    output reg  [31:0]       s_axil_rdata,
    output wire [1:0]        s_axil_rresp,
    output reg               s_axil_rvalid,
    input  wire              s_axil_rready,

    output reg               reg_wr_en,
    output reg  [ADDR_W-1:0] reg_wr_addr,
    output reg  [31:0]       reg_wr_data,
    output reg               reg_rd_en,
    output reg  [ADDR_W-1:0] reg_rd_addr,
    input  wire [31:0]       reg_rd_data
);

initial begin
    if (ADDR_W < 4 || ADDR_W > 32) begin
        $error("sp_axil_regs: ADDR_W must be in 4..32 (got %0d)", ADDR_W);
        $finish;
    end
end

// Both address and data must be present; accept them together.
assign s_axil_awready = s_axil_awvalid && s_axil_wvalid && !s_axil_bvalid && !reg_wr_en;
assign s_axil_wready = s_axil_awready;
assign s_axil_bresp = 2'b00;
assign s_axil_rresp = 2'b00;

reg rd_wait;
assign s_axil_arready = s_axil_arvalid && !s_axil_rvalid && !rd_wait && !reg_rd_en;

always @(posedge clk) begin
    reg_wr_en <= 1'b0;
    reg_rd_en <= 1'b0;
    if (s_axil_awready) begin
        reg_wr_en <= 1'b1;
        // Word writes only: partial strobes are widened (registers are 32-bit).
        reg_wr_addr <= {s_axil_awaddr[ADDR_W-1:2], 2'b00};
        reg_wr_data <= s_axil_wdata;
        s_axil_bvalid <= 1'b1;
    end else if (s_axil_bvalid && s_axil_bready) begin
        s_axil_bvalid <= 1'b0;
    end
    if (s_axil_arready) begin
        reg_rd_en <= 1'b1;
        reg_rd_addr <= {s_axil_araddr[ADDR_W-1:2], 2'b00};
    end
    rd_wait <= reg_rd_en;
    if (rd_wait) begin
        s_axil_rdata <= reg_rd_data;
        s_axil_rvalid <= 1'b1;
    end else if (s_axil_rvalid && s_axil_rready) begin
        s_axil_rvalid <= 1'b0;
    end
    if (rst) begin
        reg_wr_en <= 1'b0;
        reg_rd_en <= 1'b0;
        rd_wait <= 1'b0;
        s_axil_bvalid <= 1'b0;
        s_axil_rvalid <= 1'b0;
    end
end

/* verilator lint_off UNUSEDSIGNAL */
wire unused_ok = &{1'b0, s_axil_awprot, s_axil_arprot, s_axil_wstrb, s_axil_awaddr[1:0], s_axil_araddr[1:0]};
/* verilator lint_on UNUSEDSIGNAL */

endmodule

`resetall
