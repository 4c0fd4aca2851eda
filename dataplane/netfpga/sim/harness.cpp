// See harness.h.
#include "harness.h"

#include <algorithm>
#include <chrono>
#include <cstring>
#include <stdexcept>
#include <string>

#include "Vsp_datapath.h"
#include "verilated.h"

namespace {
constexpr int kBeatBytes = 32;
// Wall-clock drain credit is capped at two maximum-size frames: an idle link does not bank
// a burst longer than that.
constexpr double kWallBurstBytes = 2 * 1518;

double wall_now_s() {
    using namespace std::chrono;
    return duration<double>(steady_clock::now().time_since_epoch()).count();
}

void put_bytes(VlWide<8>& w, const uint8_t* src, size_t n) {
    for (int i = 0; i < 8; i++) w[i] = 0;
    for (size_t i = 0; i < n; i++) w[i / 4] |= static_cast<uint32_t>(src[i]) << (8 * (i % 4));
}

void get_bytes(const VlWide<8>& w, uint32_t keep, std::vector<uint8_t>& out) {
    for (int i = 0; i < kBeatBytes; i++)
        if (keep & (1u << i)) out.push_back(static_cast<uint8_t>(w[i / 4] >> (8 * (i % 4))));
}
}  // namespace

Harness::Harness(double ingress_bytes_per_cycle, double drain_bytes_per_cycle)
    : ingress_rate(ingress_bytes_per_cycle), drain_rate(drain_bytes_per_cycle), top_(new Vsp_datapath) {
    top_->time_skip = 0;
    top_->rst = 1;
    for (int i = 0; i < 4; i++) tick();
    top_->rst = 0;
    tick();
}

Harness::~Harness() { top_->final(); }

void Harness::inject(Packet p, uint32_t gap_cycles) {
    if (p.data.empty() || p.data.size() > 0xFFFF) throw std::invalid_argument("packet size out of range");
    ingress_.emplace_back(std::move(p), gap_cycles);
    injected++;
}

bool Harness::busy() const { return !ingress_.empty() || in_active_; }

void Harness::drive_ingress() {
    auto* t = top_.get();
    if (!in_active_ && !ingress_.empty() && cycle_ >= next_start_) {
        in_active_ = true;
        in_offset_ = 0;
        ingress_.front().first.in_cycle = cycle_;
    }
    if (!in_active_) {
        t->s_axis_tvalid = 0;
        return;
    }
    // Pace the link: a beat goes only when the port has delivered its bytes.
    in_credit_ = std::min(in_credit_ + ingress_rate, 2.0 * kBeatBytes);
    const Packet& p = ingress_.front().first;
    size_t n = std::min<size_t>(kBeatBytes, p.data.size() - in_offset_);
    t->s_axis_tvalid = in_credit_ >= static_cast<double>(n);
    put_bytes(t->s_axis_tdata, p.data.data() + in_offset_, n);
    t->s_axis_tkeep = n == 32 ? 0xFFFFFFFFu : ((1u << n) - 1);
    t->s_axis_tlast = in_offset_ + n == p.data.size();
    t->s_axis_tuser[0] = static_cast<uint32_t>(p.data.size()) | (static_cast<uint32_t>(p.src_port) << 16);
    t->s_axis_tuser[1] = 0;
    t->s_axis_tuser[2] = 0;
    t->s_axis_tuser[3] = static_cast<uint32_t>(p.in_cycle);  // [127:96]: ingress cycle
}

// The 32-bit ingress stamp of a packet's tuser, extended against the current cycle.
uint64_t Harness::ingress_cycle(uint32_t stamp) const {
    return cycle_ - static_cast<uint32_t>(static_cast<uint32_t>(cycle_) - stamp);
}

// After a beat leaving on an output port was appended to `cur`: its last beat completes the
// packet (leaving in this cycle) into `out`, and the next beat is a first one. True when it did.
bool Harness::beat_received(Packet& cur, bool& first, bool last, std::deque<Packet>& out) {
    first = last;
    if (!last) return false;
    cur.out_cycle = cycle_;
    out.push_back(std::move(cur));
    return true;
}

void Harness::tick() {
    auto* t = top_.get();
    if (real_time_) sync_rate_time();
    drive_ingress();
    if (wall_drain_bytes_per_s_ <= 0) drain_credit_ = std::min(drain_credit_ + drain_rate, 2.0 * kBeatBytes);
    t->m_axis_dma_tready = drain_credit_ >= kBeatBytes;
    t->m_axis_phys_tready = 1;
    t->clk = 0;
    t->eval();

    bool in_fire = t->s_axis_tvalid && t->s_axis_tready;
    bool dma_fire = t->m_axis_dma_tvalid && t->m_axis_dma_tready;
    bool phys_fire = t->m_axis_phys_tvalid && t->m_axis_phys_tready;
    if (in_fire) {
        size_t n = std::min<size_t>(kBeatBytes, ingress_.front().first.data.size() - in_offset_);
        in_credit_ -= static_cast<double>(n);
        in_offset_ += n;
        if (t->s_axis_tlast) {
            next_start_ = cycle_ + 1 + ingress_.front().second;
            ingress_.pop_front();
            in_active_ = false;
        }
    }
    if (dma_fire) {
        drain_credit_ -= kBeatBytes;
        if (dma_first_) {
            dma_cur_ = Packet();
            const auto& u = t->m_axis_dma_tuser;
            dma_cur_.dst_port = static_cast<uint8_t>(u[0] >> 24);
            dma_cur_.rr_path = static_cast<uint8_t>(u[1]);
            dma_cur_.lane = static_cast<uint8_t>(u[1] >> 8);
            dma_cur_.slice_id = static_cast<uint8_t>(u[1] >> 16);
            dma_cur_.hit = (u[1] >> 24) & 1;           // tuser[56]
            dma_cur_.default_path = (u[1] >> 25) & 1;  // tuser[57]
            dma_cur_.malformed = (u[1] >> 26) & 1;     // tuser[58]
            dma_cur_.in_cycle = ingress_cycle(u[3]);
            dma_cur_.src_port = static_cast<uint8_t>(u[0] >> 16);
        }
        get_bytes(t->m_axis_dma_tdata, t->m_axis_dma_tkeep, dma_cur_.data);
        if (beat_received(dma_cur_, dma_first_, t->m_axis_dma_tlast, dma_out)) dma_count++;
    }
    if (phys_fire) {
        if (phys_first_) {
            phys_cur_ = Packet();
            phys_cur_.dst_port = static_cast<uint8_t>(t->m_axis_phys_tuser[0] >> 24);
            phys_cur_.in_cycle = ingress_cycle(t->m_axis_phys_tuser[3]);
        }
        get_bytes(t->m_axis_phys_tdata, t->m_axis_phys_tkeep, phys_cur_.data);
        if (beat_received(phys_cur_, phys_first_, t->m_axis_phys_tlast, phys_out)) phys_count++;
    }
    if (in_fire || dma_fire || phys_fire) last_activity_ = cycle_;

    t->clk = 1;
    t->eval();
    t->time_skip = 0;
    cycle_++;
}

void Harness::run_until_idle(uint64_t max_cycles, uint32_t quiet) {
    // A slow drain moves a beat only every 32 / drain_rate cycles; do not call that idle.
    quiet = std::max<uint32_t>(quiet, static_cast<uint32_t>(4 * kBeatBytes / std::max(drain_rate, 0.01)));
    uint64_t end = cycle_ + max_cycles;
    while (cycle_ < end) {
        tick();
        if (!busy() && cycle_ - last_activity_ > quiet && !top_->m_axis_dma_tvalid) break;
    }
}

void Harness::set_wall_drain(double bytes_per_s) {
    wall_drain_bytes_per_s_ = std::max(0.0, bytes_per_s);
    wall_last_s_ = wall_now_s();
    drain_credit_ = 0;
}

void Harness::refill_wall_drain() {
    if (wall_drain_bytes_per_s_ <= 0) return;
    double now = wall_now_s();
    drain_credit_ = std::min(drain_credit_ + (now - wall_last_s_) * wall_drain_bytes_per_s_, kWallBurstBytes);
    wall_last_s_ = now;
}

double Harness::wall_wait_s() const {
    if (wall_drain_bytes_per_s_ <= 0 || !top_->m_axis_dma_tvalid) return -1;
    return std::max(0.0, (kBeatBytes - drain_credit_) / wall_drain_bytes_per_s_);
}

void Harness::sync_rate_time() {
    // Sets time_skip for the coming clock edge only; tick() clears it after the edge.
    double now = wall_now_s();
    if (rate_wall_t0_ < 0) {
        rate_wall_t0_ = now;
        rate_base_ = cycle_;
        return;
    }
    auto target = rate_base_ + static_cast<uint64_t>((now - rate_wall_t0_) * kClockHz);
    uint64_t have = cycle_ + rate_skipped_ + 1;  // the edge itself adds one
    if (target <= have) return;
    uint64_t skip = std::min<uint64_t>(target - have, 0xFFFFFFFFull);
    top_->time_skip = static_cast<uint32_t>(skip);
    rate_skipped_ += skip;
}

void Harness::run_live(uint64_t max_cycles, uint32_t quiet) {
    real_time_ = true;  // from the first live run on, every edge follows the wall clock
    if (wall_drain_bytes_per_s_ <= 0) {
        run_until_idle(max_cycles, quiet);
        return;
    }
    uint64_t end = cycle_ + max_cycles;
    while (cycle_ < end) {
        refill_wall_drain();
        tick();
        bool draining = top_->m_axis_dma_tvalid && drain_credit_ >= kBeatBytes;
        if (!busy() && !draining && cycle_ - last_activity_ > quiet) break;
    }
}

// AXI4-Lite transactions, one at a time, clocking the whole model meanwhile.

// Clock until `handshake()` holds, sampled with the clock low before a rising edge (the
// transfer takes place on that edge, the last one clocked); a handshake that never comes
// throws "AXI4-Lite <what>".
template <typename F>
void Harness::clock_until(const char* what, F handshake) {
    auto* t = top_.get();
    for (int guard = 0;; guard++) {
        t->clk = 0;
        t->eval();
        bool done = handshake();
        tick();
        if (done) return;
        if (guard > 1000) throw std::runtime_error(std::string("AXI4-Lite ") + what);
    }
}

void Harness::csr_write(uint32_t addr, uint32_t value) {
    auto* t = top_.get();
    t->s_axil_awaddr = addr;
    t->s_axil_wdata = value;
    t->s_axil_wstrb = 0xF;
    t->s_axil_awvalid = 1;
    t->s_axil_wvalid = 1;
    t->s_axil_bready = 1;
    clock_until("write not accepted", [t] { return t->s_axil_awready != 0; });
    t->s_axil_awvalid = 0;
    t->s_axil_wvalid = 0;
    clock_until("write response missing", [t] { return t->s_axil_bvalid != 0; });
    t->s_axil_bready = 0;
}

uint32_t Harness::csr_read(uint32_t addr) {
    auto* t = top_.get();
    t->s_axil_araddr = addr;
    t->s_axil_arvalid = 1;
    t->s_axil_rready = 1;
    clock_until("read not accepted", [t] { return t->s_axil_arready != 0; });
    t->s_axil_arvalid = 0;
    uint32_t value = 0;
    clock_until("read response missing", [t, &value] {
        value = t->s_axil_rdata;
        return t->s_axil_rvalid != 0;
    });
    t->s_axil_rready = 0;
    return value;
}
