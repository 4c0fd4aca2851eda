// The seed 000 slicing data plane, top level: parser -> match/action (ternary TCAM,
// Algorithm 1) -> per-slice token-bucket rate limiter -> output demux -> two-level queue to the DMA port; host -> network
// traffic (from dma0) leaves on nf0 untouched. One AXI4-Stream input (the output of the
// SUME input arbiter), one output per destination, one AXI4-Lite register port.
//
// Register map (byte addresses; full table in docs/netfpga.md):
//   0x00000 global: ID, HW_VERSION, geometry, SNAPSHOT, cycle counter, parser counters
//   0x20000 TCAM (sp_tcam window)
//   0x40000 classifier counters (sp_match_action window)
//   0x80000 queue counters (sp_two_level_queue window)
//   0xA0000 per slice x lane telemetry: in, out, drops, queueing delay (sp_slice_stats window)
//   0xC0000 rate limiter (sp_rate_limiter window: per-slice rate, burst, enable, drops)

`resetall
`timescale 1ns / 1ps
`default_nettype none

`include "sp_defs.vh"

module sp_datapath #(
    // Round-robin paths (level 1): power of two, 1..256. Prototype 8, production 32.
    parameter PATHS = 8,
    // Priority lanes per path (level 2): 1, 2, 4 or 8. Prototype 4, production 8.
    parameter LANES = 4,
    // TCAM entries per bank (1..1024); 64 as in seed 000.
    parameter TCAM_ENTRIES = 64,
    // Beats per queue (power of two); 64 beats of 32 bytes = 2 KiB.
    parameter QUEUE_DEPTH = 64,
    // AXI4-Stream data width in bits; 256 as NetFPGA SUME.
    parameter DATA_W = 256,
    parameter KEEP_W = DATA_W / 8,
    parameter USER_W = `SP_TUSER_W,
    // Header bytes the parser inspects (multiple of KEEP_W).
    parameter HDR_BYTES = 192,
    // Rate-limiter buckets: slice ids 1..RATE_SLICES-1 can be limited (2..256).
    parameter RATE_SLICES = 64,
    // Slice ids the per slice x lane telemetry counts (0..STATS_SLICES-1): power of two,
    // STATS_SLICES * LANES <= 256; by default as many as the window holds.
    parameter STATS_SLICES = 256 / LANES,
    // Clock the design is built for, in Hz; read by the driver to turn bit/s into the
    // limiter's bytes per cycle (200 MHz as NetFPGA SUME's core clock).
    parameter CLOCK_HZ = 200_000_000,
    parameter ADDR_W = 20
) (
    input  wire              clk,
    input  wire              rst,
    // Cycles the environment skipped in this cycle, added to the rate limiter's time base:
    // 0 on the card (tie off); a simulator running in real time sets it when it wakes from
    // idle, so token buckets refill by wall-clock time there (dataplane/netfpga/sim).
    input  wire [31:0]       time_skip,

    // Packets in (tuser: SUME layout, src port one-hot, length in bytes).
    input  wire [DATA_W-1:0] s_axis_tdata,
    input  wire [KEEP_W-1:0] s_axis_tkeep,
    input  wire              s_axis_tvalid,
    output wire              s_axis_tready,
    input  wire              s_axis_tlast,
    input  wire [USER_W-1:0] s_axis_tuser,

    // To the host (dma0), through the two-level queue.
    output wire [DATA_W-1:0] m_axis_dma_tdata,
    output wire [KEEP_W-1:0] m_axis_dma_tkeep,
    output wire              m_axis_dma_tvalid,
    input  wire              m_axis_dma_tready,
    output wire              m_axis_dma_tlast,
    output wire [USER_W-1:0] m_axis_dma_tuser,

    // To the network (nf0..nf3).
    output wire [DATA_W-1:0] m_axis_phys_tdata,
    output wire [KEEP_W-1:0] m_axis_phys_tkeep,
    output wire              m_axis_phys_tvalid,
    input  wire              m_axis_phys_tready,
    output wire              m_axis_phys_tlast,
    output wire [USER_W-1:0] m_axis_phys_tuser,

    // Register port.
    input  wire [ADDR_W-1:0] s_axil_awaddr,
    input  wire [2:0]        s_axil_awprot,
    input  wire              s_axil_awvalid,
    output wire              s_axil_awready,
    input  wire [31:0]       s_axil_wdata,
    input  wire [3:0]        s_axil_wstrb,
    input  wire              s_axil_wvalid,
    output wire              s_axil_wready,
    output wire [1:0]        s_axil_bresp,
    output wire              s_axil_bvalid,
    input  wire              s_axil_bready,
    input  wire [ADDR_W-1:0] s_axil_araddr,
    input  wire [2:0]        s_axil_arprot,
    input  wire              s_axil_arvalid,
    output wire              s_axil_arready,
    output wire [31:0]       s_axil_rdata,
    output wire [1:0]        s_axil_rresp,
    output wire              s_axil_rvalid,
    input  wire              s_axil_rready
);

localparam [31:0] ID = 32'h5350_4E46;          // "SPNF"
localparam [31:0] HW_VERSION = 32'h0001_0100;  // 1.1: slice x lane telemetry, EPOCH

initial begin
    if (ADDR_W != 20) begin
        $error("sp_datapath: ADDR_W must be 20 (the register map spans 1 MiB)");
        $finish;
    end
end

// ---- registers ------------------------------------------------------------------------------
wire              reg_wr_en, reg_rd_en;
wire [ADDR_W-1:0] reg_wr_addr, reg_rd_addr;
wire [31:0]       reg_wr_data;
reg  [31:0]       reg_rd_data;

sp_axil_regs #(.ADDR_W(ADDR_W)) axil_inst (
    .clk(clk), .rst(rst),
    .s_axil_awaddr(s_axil_awaddr), .s_axil_awprot(s_axil_awprot), .s_axil_awvalid(s_axil_awvalid),
    .s_axil_awready(s_axil_awready), .s_axil_wdata(s_axil_wdata), .s_axil_wstrb(s_axil_wstrb),
    .s_axil_wvalid(s_axil_wvalid), .s_axil_wready(s_axil_wready), .s_axil_bresp(s_axil_bresp),
    .s_axil_bvalid(s_axil_bvalid), .s_axil_bready(s_axil_bready), .s_axil_araddr(s_axil_araddr),
    .s_axil_arprot(s_axil_arprot), .s_axil_arvalid(s_axil_arvalid), .s_axil_arready(s_axil_arready),
    .s_axil_rdata(s_axil_rdata), .s_axil_rresp(s_axil_rresp), .s_axil_rvalid(s_axil_rvalid),
    .s_axil_rready(s_axil_rready),
    .reg_wr_en(reg_wr_en), .reg_wr_addr(reg_wr_addr), .reg_wr_data(reg_wr_data),
    .reg_rd_en(reg_rd_en), .reg_rd_addr(reg_rd_addr), .reg_rd_data(reg_rd_data)
);

wire wr_global = reg_wr_en && reg_wr_addr[19:16] == 4'h0;
wire wr_tcam = reg_wr_en && reg_wr_addr[19:17] == 3'b001;
wire rd_global = reg_rd_en && reg_rd_addr[19:16] == 4'h0;
wire rd_tcam = reg_rd_en && reg_rd_addr[19:17] == 3'b001;
wire rd_cls = reg_rd_en && reg_rd_addr[19:16] == 4'h4;
wire rd_queue = reg_rd_en && reg_rd_addr[19:16] == 4'h8;
wire wr_rate = reg_wr_en && reg_wr_addr[19:16] == 4'hC;
wire rd_rate = reg_rd_en && reg_rd_addr[19:16] == 4'hC;
wire rd_stats = reg_rd_en && reg_rd_addr[19:17] == 3'b101;

reg  [2:0]  rd_sel;  // which block answers the read in flight
reg  [31:0] global_rd_data;
wire [31:0] tcam_rd_data, cls_rd_data, queue_rd_data, rate_rd_data, stats_rd_data;
always @* begin
    case (rd_sel)
        3'd0: reg_rd_data = global_rd_data;
        3'd1: reg_rd_data = tcam_rd_data;
        3'd2: reg_rd_data = cls_rd_data;
        3'd3: reg_rd_data = queue_rd_data;
        3'd5: reg_rd_data = stats_rd_data;
        default: reg_rd_data = rate_rd_data;
    endcase
end

reg [63:0] cycles;
reg [63:0] rate_now;  // the rate limiter's time base: cycles plus any skipped by a simulator
reg        snap;
reg [31:0] scratch;
// Counter epoch: 0 after reset; the first write of a non-zero value sticks until the next
// reset (later writes are ignored), so every reader agrees on it and a changed or zero
// epoch tells a reader the counters restarted from zero.
reg [31:0] epoch_reg;
wire [63:0] p_packets, p_malformed, p_non_ipv4;
reg  [63:0] s_packets, s_malformed, s_non_ipv4;

always @(posedge clk) begin
    cycles <= cycles + 64'd1;
    rate_now <= rate_now + 64'd1 + {32'd0, time_skip};
    snap <= wr_global && reg_wr_addr[15:0] == 16'h0020 && reg_wr_data[0];
    if (wr_global && reg_wr_addr[15:0] == 16'h0048) begin
        scratch <= reg_wr_data;
    end
    if (wr_global && reg_wr_addr[15:0] == 16'h0050 && epoch_reg == 32'd0) begin
        epoch_reg <= reg_wr_data;
    end
    if (snap) begin
        s_packets <= p_packets;
        s_malformed <= p_malformed;
        s_non_ipv4 <= p_non_ipv4;
    end
    if (reg_rd_en) begin
        rd_sel <= rd_tcam ? 3'd1 : rd_cls ? 3'd2 : rd_queue ? 3'd3 : rd_rate ? 3'd4 : rd_stats ? 3'd5 : 3'd0;
    end
    if (rd_global) begin
        case (reg_rd_addr[15:0])
            16'h0000: global_rd_data <= ID;
            16'h0004: global_rd_data <= HW_VERSION;
            16'h0008: global_rd_data <= PATHS;
            16'h000c: global_rd_data <= LANES;
            16'h0010: global_rd_data <= TCAM_ENTRIES;
            16'h0014: global_rd_data <= QUEUE_DEPTH;
            16'h0018: global_rd_data <= DATA_W;
            16'h001c: global_rd_data <= CLOCK_HZ;
            16'h0028: global_rd_data <= cycles[31:0];
            16'h002c: global_rd_data <= cycles[63:32];
            16'h0030: global_rd_data <= s_packets[31:0];
            16'h0034: global_rd_data <= s_packets[63:32];
            16'h0038: global_rd_data <= s_malformed[31:0];
            16'h003c: global_rd_data <= s_malformed[63:32];
            16'h0040: global_rd_data <= s_non_ipv4[31:0];
            16'h0044: global_rd_data <= s_non_ipv4[63:32];
            16'h0048: global_rd_data <= scratch;
            16'h004c: global_rd_data <= STATS_SLICES;
            16'h0050: global_rd_data <= epoch_reg;
            default: global_rd_data <= 32'd0;
        endcase
    end
    if (rst) begin
        cycles <= 64'd0;
        rate_now <= 64'd0;
        snap <= 1'b0;
        scratch <= 32'd0;
        epoch_reg <= 32'd0;
        rd_sel <= 3'd0;
        s_packets <= 64'd0;
        s_malformed <= 64'd0;
        s_non_ipv4 <= 64'd0;
    end
end

// ---- pipeline ---------------------------------------------------------------------------------
wire [DATA_W-1:0] p_tdata, l_tdata, c_tdata;
wire [KEEP_W-1:0] p_tkeep, l_tkeep, c_tkeep;
wire              p_tvalid, p_tready, p_tlast, l_tvalid, l_tready, l_tlast, c_tvalid, c_tready, c_tlast;
wire [USER_W-1:0] p_tuser, l_tuser, c_tuser;
wire [85:0]       p_key;
wire              p_key_valid;

sp_parser #(.DATA_W(DATA_W), .HDR_BYTES(HDR_BYTES)) parser_inst (
    .clk(clk), .rst(rst),
    .s_axis_tdata(s_axis_tdata), .s_axis_tkeep(s_axis_tkeep), .s_axis_tvalid(s_axis_tvalid),
    .s_axis_tready(s_axis_tready), .s_axis_tlast(s_axis_tlast), .s_axis_tuser(s_axis_tuser),
    .m_axis_tdata(p_tdata), .m_axis_tkeep(p_tkeep), .m_axis_tvalid(p_tvalid),
    .m_axis_tready(p_tready), .m_axis_tlast(p_tlast), .m_axis_tuser(p_tuser),
    .m_key(p_key), .m_key_valid(p_key_valid),
    .cnt_packets(p_packets), .cnt_malformed(p_malformed), .cnt_non_ipv4(p_non_ipv4)
);

sp_match_action #(.ENTRIES(TCAM_ENTRIES), .LANES(LANES), .PATHS(PATHS), .DATA_W(DATA_W)) match_inst (
    .clk(clk), .rst(rst),
    .s_axis_tdata(p_tdata), .s_axis_tkeep(p_tkeep), .s_axis_tvalid(p_tvalid),
    .s_axis_tready(p_tready), .s_axis_tlast(p_tlast), .s_axis_tuser(p_tuser),
    .s_key(p_key), .s_key_valid(p_key_valid),
    .m_axis_tdata(l_tdata), .m_axis_tkeep(l_tkeep), .m_axis_tvalid(l_tvalid),
    .m_axis_tready(l_tready), .m_axis_tlast(l_tlast), .m_axis_tuser(l_tuser),
    .snap(snap),
    .tcam_wr_en(wr_tcam), .tcam_wr_addr(reg_wr_addr[16:0]), .tcam_wr_data(reg_wr_data),
    .tcam_rd_en(rd_tcam), .tcam_rd_addr(reg_rd_addr[16:0]), .tcam_rd_data(tcam_rd_data),
    .cnt_rd_en(rd_cls), .cnt_rd_addr(reg_rd_addr[15:0]), .cnt_rd_data(cls_rd_data)
);

// Per-slice rate limits: excess packets are dropped (and counted) before the queue.
wire rl_drop;
sp_rate_limiter #(.SLICES(RATE_SLICES), .DATA_W(DATA_W)) rate_inst (
    .clk(clk), .rst(rst), .now(rate_now), .ev_drop(rl_drop),
    .s_axis_tdata(l_tdata), .s_axis_tkeep(l_tkeep), .s_axis_tvalid(l_tvalid),
    .s_axis_tready(l_tready), .s_axis_tlast(l_tlast), .s_axis_tuser(l_tuser),
    .m_axis_tdata(c_tdata), .m_axis_tkeep(c_tkeep), .m_axis_tvalid(c_tvalid),
    .m_axis_tready(c_tready), .m_axis_tlast(c_tlast), .m_axis_tuser(c_tuser),
    .snap(snap),
    .cfg_wr_en(wr_rate), .cfg_wr_addr(reg_wr_addr[15:0]), .cfg_wr_data(reg_wr_data),
    .cfg_rd_en(rd_rate), .cfg_rd_addr(reg_rd_addr[15:0]), .cfg_rd_data(rate_rd_data)
);

// Output demux by destination port, decided on the first beat and held for the packet.
reg  c_first;
reg  route_dma_reg;
wire route_dma = c_first ? (c_tuser[`SP_DST_PORT] & 8'b1010_1010) != 8'd0 : route_dma_reg;
wire q_tready;
assign c_tready = route_dma ? q_tready : m_axis_phys_tready;
always @(posedge clk) begin
    if (c_tvalid && c_tready) begin
        c_first <= c_tlast;
        route_dma_reg <= route_dma;
    end
    if (rst) begin
        c_first <= 1'b1;
        route_dma_reg <= 1'b0;
    end
end

assign m_axis_phys_tdata = c_tdata;
assign m_axis_phys_tkeep = c_tkeep;
assign m_axis_phys_tlast = c_tlast;
assign m_axis_phys_tuser = c_tuser;
assign m_axis_phys_tvalid = c_tvalid && !route_dma;

// The queue's time base is the rate limiter's: the cycle count on the card; a simulator
// running in real time adds the cycles it skipped, so sojourns are wall-clock time there.
wire              q_enq, q_full, q_deq;
wire [USER_W-1:0] q_in_user, q_deq_user;
wire [31:0]       q_sojourn;
sp_two_level_queue #(.PATHS(PATHS), .LANES(LANES), .DEPTH(QUEUE_DEPTH), .DATA_W(DATA_W)) queue_inst (
    .clk(clk), .rst(rst), .now(rate_now[31:0]),
    .ev_enq(q_enq), .ev_full(q_full), .ev_in_user(q_in_user),
    .ev_deq(q_deq), .ev_deq_user(q_deq_user), .ev_deq_sojourn(q_sojourn),
    .s_axis_tdata(c_tdata), .s_axis_tkeep(c_tkeep), .s_axis_tvalid(c_tvalid && route_dma),
    .s_axis_tready(q_tready), .s_axis_tlast(c_tlast), .s_axis_tuser(c_tuser),
    .m_axis_tdata(m_axis_dma_tdata), .m_axis_tkeep(m_axis_dma_tkeep), .m_axis_tvalid(m_axis_dma_tvalid),
    .m_axis_tready(m_axis_dma_tready), .m_axis_tlast(m_axis_dma_tlast), .m_axis_tuser(m_axis_dma_tuser),
    .snap(snap),
    .cnt_rd_en(rd_queue), .cnt_rd_addr(reg_rd_addr[15:0]), .cnt_rd_data(queue_rd_data)
);

sp_slice_stats #(.SLICES(STATS_SLICES), .LANES(LANES)) stats_inst (
    .clk(clk), .rst(rst), .snap(snap),
    .enq_ok(q_enq), .enq_full(q_full), .enq_user(q_in_user),
    .rl_drop(rl_drop), .rl_user(l_tuser),
    .deq(q_deq), .deq_user(q_deq_user), .deq_sojourn(q_sojourn),
    .cnt_rd_en(rd_stats), .cnt_rd_addr(reg_rd_addr[16:0]), .cnt_rd_data(stats_rd_data)
);

endmodule

`resetall
