// Cycle driver around the Verilated sp_datapath: feeds packets into s_axis at a paced
// ingress rate, drains m_axis_dma at a lower rate (the DMA / host bottleneck of seed 000),
// collects output packets with their ingress and egress cycles, and performs CSR reads
// and writes over the AXI4-Lite port.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

class Vsp_datapath;

struct Packet {
    std::vector<uint8_t> data;
    uint8_t src_port = 0x01;   // one-hot SUME port: nf0 = 0x01, dma0 = 0x02
    uint64_t in_cycle = 0;     // cycle the first beat was presented
    uint64_t out_cycle = 0;    // cycle the last beat left
    uint8_t rr_path = 0, lane = 0, slice_id = 0, dst_port = 0;
    bool hit = false, default_path = false, malformed = false;  // tuser SP_HIT / SP_DEFAULT / SP_MALFORMED
};

class Harness {
public:
    // Rates in bytes per cycle (200 MHz: 10 Gb/s = 6.25 B/cycle).
    Harness(double ingress_bytes_per_cycle, double drain_bytes_per_cycle);
    ~Harness();

    void inject(Packet p, uint32_t gap_cycles);
    uint32_t csr_read(uint32_t addr);
    void csr_write(uint32_t addr, uint32_t value);
    void tick();
    // Clock until every injected packet has left (or was dropped) and nothing moved for
    // `quiet` cycles, or `max_cycles` passed.
    void run_until_idle(uint64_t max_cycles, uint32_t quiet = 64);
    bool busy() const;

    // Live (veth) mode with a wall-clock drain: m_axis_dma moves only on credit that
    // refill_wall_drain() grants at `wall_drain_bytes_per_s` of real time (0 = off: the
    // drain is paced in simulated cycles at drain_rate). Then the RTL's queues fill while
    // the link is slower than the offered load and its strict-priority lanes decide who is
    // dropped, as on the card, instead of the host's socket buffers dropping every lane alike.
    void set_wall_drain(double bytes_per_s);
    double wall_drain() const { return wall_drain_bytes_per_s_; }
    void refill_wall_drain();
    // Clock while packets enter or the drain has credit for a waiting beat; stop once only
    // queued packets wait for credit (the RTL holds still: no cycles burnt meanwhile).
    void run_live(uint64_t max_cycles, uint32_t quiet = 64);
    // Seconds until the drain has credit for the next beat, when a beat waits; else -1.
    double wall_wait_s() const;
    // Live mode: before each clock edge, move the rate limiter's time base (sp_datapath
    // time_skip) up to the wall clock at kClockHz, so token buckets refill in real time
    // although the model clocks only while packets are in flight (and ~1000x slower than
    // the card while it does). Cycle-accurate runs (INJECT / RUN) never skip.
    void sync_rate_time();
    static constexpr double kClockHz = 200e6;

    uint64_t cycle() const { return cycle_; }
    std::deque<Packet> dma_out, phys_out;
    uint64_t injected = 0, dma_count = 0, phys_count = 0;
    double ingress_rate, drain_rate;

private:
    std::unique_ptr<Vsp_datapath> top_;
    uint64_t cycle_ = 0, last_activity_ = 0;
    std::deque<std::pair<Packet, uint32_t>> ingress_;
    size_t in_offset_ = 0;
    bool in_active_ = false;
    double in_credit_ = 0, drain_credit_ = 0;
    double wall_drain_bytes_per_s_ = 0, wall_last_s_ = 0;
    uint64_t next_start_ = 0;
    bool real_time_ = false;
    double rate_wall_t0_ = -1;
    uint64_t rate_base_ = 0, rate_skipped_ = 0;
    Packet dma_cur_, phys_cur_;
    bool dma_first_ = true, phys_first_ = true;
    void drive_ingress();
    uint64_t ingress_cycle(uint32_t stamp) const;
    bool beat_received(Packet& cur, bool& first, bool last, std::deque<Packet>& out);
    template <typename F>
    void clock_until(const char* what, F handshake);
};
