// sp_sim: the NetFPGA slicing data plane as a running process (Verilator model).
//
//   sp_sim --socket PATH [--tcp PORT [--listen-host ADDR]] [--token-file F [--test-commands]]
//          [--ingress-gbps 10] [--drain-gbps 4] [--veth-in IF --veth-out IF [--live-drain-mbps M]]
//
// The control socket speaks one text command per line, one reply line per command
// ("OK ..." or "ERR <reason>"); see docs/netfpga.md:
//   AUTH <token>             with --token-file: must be each connection's first line, else
//                            "ERR unauthorized: ..." and the connection is closed
//   R <addr>                 CSR read            -> OK <value>
//   W <addr> <value>         CSR write           -> OK
//   INJECT <pcap> [gap]      queue a pcap's packets on nf0 (gap idle cycles between)
//   INJECT_DMA <pcap>        queue a pcap's packets on dma0 (host -> network)
//   CAPTURE <pcap>           DMA-side output to <pcap> (ns timestamps = cycle * 5 ns)
//                            and <pcap>.csv (in_cycle,out_cycle,len,rr_path,lane,slice_id,
//                            hit,default,malformed: the frame's decision bits, docs/packets.md)
//   RUN [max_cycles]         clock until idle    -> OK <cycle> <dma_packets> <phys_packets>
//   RATES <in_gbps> <drain_gbps>
//   LIVE_DRAIN <mbps>        veth mode: the DMA drain in wall-clock Mbit/s (0 = off)
//   STATS                    -> OK cycle=.. injected=.. dma=.. phys=..
//   FAULT <n>                drop this connection instead of executing the (n+1)th write
//   QUIT
// With --token-file the process is an agent other hosts may reach: a connection may then use
// only what the driver needs (R, W); the rest names host files, stops the process or drives
// the simulation, and is refused unless --test-commands is given (tests, the local testbed).
// With --veth-in / --veth-out the model free-runs: frames received on veth-in enter from
// nf0, DMA output leaves on veth-out, frames received on veth-out enter from dma0 and
// leave on veth-in (AF_PACKET). --live-drain-mbps (or LIVE_DRAIN) paces the DMA drain in
// wall-clock time instead of simulated cycles: a link slower than the offered load fills
// the RTL's queues and its strict-priority lanes decide who loses (seed 000 Table 5);
// without it the drain runs at --drain-gbps of simulated time, i.e. as fast as the model
// clocks, and an overload is lost before the model (in the host's socket buffers).
#include <arpa/inet.h>
#include <fcntl.h>
#include <linux/if_packet.h>
#include <net/ethernet.h>
#include <net/if.h>
#include <netinet/in.h>
#include <pcap/pcap.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include "harness.h"
#include "verilated.h"

namespace {

constexpr double kClockHz = 200e6;
volatile std::sig_atomic_t g_stop = 0;

double gbps_to_bytes_per_cycle(double gbps) { return gbps * 1e9 / 8.0 / kClockHz; }

struct Capture {
    pcap_t* dead = nullptr;
    pcap_dumper_t* dump = nullptr;
    FILE* csv = nullptr;
    void close() {
        if (dump) pcap_dump_close(dump);
        if (dead) pcap_close(dead);
        if (csv) fclose(csv);
        dump = nullptr;
        dead = nullptr;
        csv = nullptr;
    }
    bool open(const std::string& path, std::string& err) {
        close();
        dead = pcap_open_dead_with_tstamp_precision(DLT_EN10MB, 65535, PCAP_TSTAMP_PRECISION_NANO);
        dump = pcap_dump_open(dead, path.c_str());
        if (!dump) {
            err = pcap_geterr(dead);
            close();
            return false;
        }
        csv = fopen((path + ".csv").c_str(), "w");
        if (!csv) {
            err = strerror(errno);
            close();
            return false;
        }
        fprintf(csv, "in_cycle,out_cycle,len,rr_path,lane,slice_id,hit,default,malformed\n");
        return true;
    }
    void write(const Packet& p) {
        struct pcap_pkthdr h {};
        uint64_t ns = p.out_cycle * 5;  // 200 MHz
        h.ts.tv_sec = static_cast<time_t>(ns / 1000000000ull);
        h.ts.tv_usec = static_cast<suseconds_t>(ns % 1000000000ull);  // ns precision file
        h.caplen = h.len = static_cast<bpf_u_int32>(p.data.size());
        pcap_dump(reinterpret_cast<u_char*>(dump), &h, p.data.data());
        fprintf(csv, "%llu,%llu,%zu,%u,%u,%u,%d,%d,%d\n", static_cast<unsigned long long>(p.in_cycle),
                static_cast<unsigned long long>(p.out_cycle), p.data.size(), p.rr_path, p.lane, p.slice_id,
                p.hit ? 1 : 0, p.default_path ? 1 : 0, p.malformed ? 1 : 0);
    }
    void flush() {
        if (dump) pcap_dump_flush(dump);
        if (csv) fflush(csv);
    }
};

int open_packet_socket(const char* ifname) {
    int fd = socket(AF_PACKET, SOCK_RAW | SOCK_NONBLOCK, htons(ETH_P_ALL));
    if (fd < 0) return -1;
    struct sockaddr_ll sll {};
    sll.sll_family = AF_PACKET;
    sll.sll_protocol = htons(ETH_P_ALL);
    sll.sll_ifindex = static_cast<int>(if_nametoindex(ifname));
    if (sll.sll_ifindex == 0 || bind(fd, reinterpret_cast<sockaddr*>(&sll), sizeof sll) < 0) {
        ::close(fd);
        return -1;
    }
    // The socket stands for the card's 10G port: when the host starves this process, frames
    // must wait here, not be dropped by the kernel, so that every drop is the model's own.
    // (The default ~200 KiB holds ~100 full-size frames; a burst of a loaded test lost its tail.)
    int bytes = 16 << 20;
    if (setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &bytes, sizeof bytes) < 0)
        (void)setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &bytes, sizeof bytes);
    return fd;
}

// Frames the kernel received on `fd` (our own transmissions are skipped).
void read_frames(int fd, std::vector<std::vector<uint8_t>>& out) {
    uint8_t buf[65536];
    for (;;) {
        struct sockaddr_ll from {};
        socklen_t len = sizeof from;
        ssize_t n = recvfrom(fd, buf, sizeof buf, 0, reinterpret_cast<sockaddr*>(&from), &len);
        if (n <= 0) return;
        if (from.sll_pkttype == PACKET_OUTGOING) continue;
        out.emplace_back(buf, buf + n);
    }
}

int listen_unix(const std::string& path) {
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    struct sockaddr_un a {};
    a.sun_family = AF_UNIX;
    if (path.size() >= sizeof a.sun_path) return -1;
    strcpy(a.sun_path, path.c_str());
    unlink(path.c_str());
    if (bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) < 0 || listen(fd, 4) < 0) return -1;
    return fd;
}

// An IPv4 or IPv6 literal (no names: what the listener binds must be what the operator wrote).
struct ListenAddr {
    sockaddr_storage ss{};
    socklen_t len = 0;
    bool loopback = false;
};

bool parse_listen_host(const std::string& host, int port, ListenAddr& out) {
    auto* v4 = reinterpret_cast<sockaddr_in*>(&out.ss);
    auto* v6 = reinterpret_cast<sockaddr_in6*>(&out.ss);
    if (inet_pton(AF_INET, host.c_str(), &v4->sin_addr) == 1) {
        v4->sin_family = AF_INET;
        v4->sin_port = htons(static_cast<uint16_t>(port));
        out.len = sizeof *v4;
        out.loopback = (ntohl(v4->sin_addr.s_addr) >> 24) == 127;
        return true;
    }
    std::string bare = host.size() > 2 && host.front() == '[' && host.back() == ']' ? host.substr(1, host.size() - 2)
                                                                                     : host;
    if (inet_pton(AF_INET6, bare.c_str(), &v6->sin6_addr) == 1) {
        v6->sin6_family = AF_INET6;
        v6->sin6_port = htons(static_cast<uint16_t>(port));
        out.len = sizeof *v6;
        out.loopback = IN6_IS_ADDR_LOOPBACK(&v6->sin6_addr);
        return true;
    }
    return false;
}

int listen_tcp(const ListenAddr& at) {
    int fd = socket(at.ss.ss_family, SOCK_STREAM, 0);
    if (fd < 0) return -1;
    int one = 1;
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (bind(fd, reinterpret_cast<const sockaddr*>(&at.ss), at.len) < 0 || listen(fd, 16) < 0) {
        ::close(fd);
        return -1;
    }
    return fd;
}

// The token from --token-file: surrounding whitespace stripped (a trailing newline is the
// usual way such a file ends), at least 16 characters, no whitespace inside (it travels in a
// line of a whitespace-separated protocol). Exits with a message when unusable.
std::string read_token(const std::string& path) {
    FILE* f = fopen(path.c_str(), "r");
    if (!f) {
        fprintf(stderr, "sp_sim: --token-file %s: %s\n", path.c_str(), strerror(errno));
        exit(2);
    }
    std::string t;
    char buf[4096];
    size_t n;
    while ((n = fread(buf, 1, sizeof buf, f)) > 0) t.append(buf, n);
    fclose(f);
    auto space = [](char c) { return c == ' ' || c == '\t' || c == '\n' || c == '\r'; };
    while (!t.empty() && space(t.back())) t.pop_back();
    size_t start = 0;
    while (start < t.size() && space(t[start])) start++;
    t.erase(0, start);
    if (t.size() < 16 || t.size() > 1024 || std::any_of(t.begin(), t.end(), [](char c) { return c <= ' ' || c == 0x7f; })) {
        fprintf(stderr, "sp_sim: --token-file %s: the token must be 16..1024 printable characters without spaces\n",
                path.c_str());
        exit(2);
    }
    return t;
}

// Equal strings, in a time that depends only on the expected token's length: a guess does not
// learn from the reply's delay how many of its leading characters were right.
bool same_token(const std::string& given, const std::string& want) {
    unsigned char diff = given.size() == want.size() ? 0 : 1;
    for (size_t i = 0; i < want.size(); i++)
        diff |= static_cast<unsigned char>(want[i] ^ (i < given.size() ? given[i] : 0));
    return diff == 0;
}

// What a driver needs of a token-protected agent; everything else is for tests and the testbed.
bool driver_command(const std::string& cmd) { return cmd == "R" || cmd == "W"; }

// A command line is short (a CSR access, or a command naming one file): a peer that sends more
// without a newline is not speaking the protocol, and its buffer must not grow without bound.
constexpr size_t kMaxLine = 8192;

struct Client {
    int fd;
    std::string in;  // unparsed input
    bool authed;
};

struct Server {
    Harness& h;
    Capture capture;
    std::vector<Client> clients;
    std::string token;            // empty: no authentication (a local socket, the testbed)
    bool test_commands = false;   // with a token: allow the commands beyond driver_command()
    long fault_writes = -1;  // writes left before the connection is dropped; -1 = none
    bool quit = false;

    explicit Server(Harness& harness) : h(harness) {}

    void drain_outputs() {
        while (!h.dma_out.empty()) {
            if (capture.dump) capture.write(h.dma_out.front());
            h.dma_out.pop_front();
        }
        h.phys_out.clear();
        capture.flush();
    }

    size_t load_pcap(const std::string& path, uint8_t port, uint32_t gap, std::string& err) {
        char errbuf[PCAP_ERRBUF_SIZE];
        pcap_t* p = pcap_open_offline(path.c_str(), errbuf);
        if (!p) {
            err = errbuf;
            return 0;
        }
        size_t n = 0;
        struct pcap_pkthdr* hdr;
        const u_char* data;
        while (pcap_next_ex(p, &hdr, &data) == 1) {
            if (hdr->caplen == 0 || hdr->caplen > 0xFFFF) continue;
            Packet pkt;
            pkt.data.assign(data, data + hdr->caplen);
            pkt.src_port = port;
            h.inject(std::move(pkt), gap);
            n++;
        }
        pcap_close(p);
        return n;
    }

    static uint32_t u32(const std::string& text) {
        size_t used = 0;
        unsigned long long v = std::stoull(text, &used, 0);
        if (used != text.size() || v > 0xFFFFFFFFull) throw std::invalid_argument("not a 32-bit number: " + text);
        return static_cast<uint32_t>(v);
    }

    // Returns the reply, or an empty string when the connection must be dropped.
    std::string execute(const std::string& line) {
        std::istringstream in(line);
        std::string cmd;
        in >> cmd;
        std::string err;
        try {
            if (cmd == "R") {
                std::string a;
                in >> a;
                uint32_t v = h.csr_read(u32(a));
                return "OK " + std::to_string(v);
            }
            if (cmd == "W") {
                std::string a, v;
                in >> a >> v;
                if (fault_writes == 0) {
                    fault_writes = -1;
                    return "";
                }
                if (fault_writes > 0) fault_writes--;
                uint32_t addr = u32(a), value = u32(v);
                h.csr_write(addr, value);
                return "OK";
            }
            if (cmd == "INJECT" || cmd == "INJECT_DMA") {
                std::string path;
                uint32_t gap = 0;
                in >> path >> gap;
                size_t n = load_pcap(path, cmd == "INJECT" ? 0x01 : 0x02, gap, err);
                return err.empty() ? "OK " + std::to_string(n) : "ERR " + err;
            }
            if (cmd == "CAPTURE") {
                std::string path;
                in >> path;
                return capture.open(path, err) ? "OK" : "ERR " + err;
            }
            if (cmd == "RUN") {
                unsigned long long max_cycles = 2000000000ull;
                in >> max_cycles;
                h.run_until_idle(max_cycles);
                drain_outputs();
                return "OK " + std::to_string(h.cycle()) + " " + std::to_string(h.dma_count) + " " +
                       std::to_string(h.phys_count);
            }
            if (cmd == "RATES") {
                double a = 0, b = 0;
                in >> a >> b;
                if (a <= 0 || b <= 0) return "ERR rates must be positive";
                h.ingress_rate = gbps_to_bytes_per_cycle(a);
                h.drain_rate = gbps_to_bytes_per_cycle(b);
                return "OK";
            }
            if (cmd == "LIVE_DRAIN") {
                double mbps = -1;
                in >> mbps;
                if (!(mbps >= 0)) return "ERR LIVE_DRAIN needs a rate in Mbit/s >= 0 (0 = off)";
                h.set_wall_drain(mbps * 1e6 / 8.0);
                return "OK";
            }
            if (cmd == "STATS") {
                return "OK cycle=" + std::to_string(h.cycle()) + " injected=" + std::to_string(h.injected) +
                       " dma=" + std::to_string(h.dma_count) + " phys=" + std::to_string(h.phys_count) +
                       " live_drain_mbps=" + std::to_string(h.wall_drain() * 8.0 / 1e6);
            }
            if (cmd == "FAULT") {
                in >> fault_writes;
                return "OK";
            }
            if (cmd == "QUIT") {
                quit = true;
                return "OK";
            }
        } catch (const std::exception& e) {
            return std::string("ERR ") + e.what();
        }
        return "ERR unknown command";
    }

    void drop(int fd) {
        ::close(fd);
        for (size_t i = 0; i < clients.size(); i++)
            if (clients[i].fd == fd) clients.erase(clients.begin() + static_cast<long>(i));
    }

    void accept_from(int lfd) {
        int c = accept(lfd, nullptr, nullptr);
        if (c >= 0) clients.push_back({c, std::string(), token.empty()});
    }

    // The reply to `line` from `c`; `close` is set when the connection must end after it.
    std::string screen(Client& c, const std::string& line, bool& close) {
        std::string cmd = line.substr(0, line.find(' '));
        if (!c.authed) {
            close = true;
            if (cmd == "AUTH" && same_token(line.size() > 5 ? line.substr(5) : std::string(), token)) {
                c.authed = true;
                close = false;
                return "OK";
            }
            return "ERR unauthorized: the first line must be AUTH <token> (this agent was started with --token-file)";
        }
        if (cmd == "AUTH")
            return token.empty() ? "ERR no token: this agent was started without --token-file"
                                 : "ERR already authenticated";
        if (!token.empty() && !test_commands && !driver_command(cmd))
            return "ERR refused: " + cmd + " is a test command, off on a token-protected agent (--test-commands)";
        std::string reply = execute(line);
        close = reply.empty();
        return reply;
    }

    // Commands of one client run to completion before the next client's (the model is
    // single-threaded, like the register bus it stands for).
    void on_readable(int client) {
        Client* c = nullptr;
        for (auto& x : clients)
            if (x.fd == client) c = &x;
        if (!c) return;
        std::string& inbuf = c->in;
        char buf[65536];
        ssize_t n = read(client, buf, sizeof buf);
        if (n <= 0) {
            drop(client);
            return;
        }
        inbuf.append(buf, static_cast<size_t>(n));
        std::string replies;
        bool close = false;
        size_t pos;
        while (!close && (pos = inbuf.find('\n')) != std::string::npos) {
            std::string line = inbuf.substr(0, pos);
            inbuf.erase(0, pos + 1);
            if (!line.empty() && line.back() == '\r') line.pop_back();
            if (line.empty()) continue;
            std::string reply = screen(*c, line, close);
            if (!reply.empty()) replies += reply + "\n";  // empty: an injected fault, vanish mid-conversation
        }
        if (!close && inbuf.size() > kMaxLine) {
            replies += "ERR line too long\n";
            close = true;
        }
        if (!replies.empty()) (void)!write(client, replies.data(), replies.size());
        if (close) drop(client);  // the lines after a refused AUTH are never executed
    }
};

void on_signal(int) { g_stop = 1; }

}  // namespace

int main(int argc, char** argv) {
    Verilated::commandArgs(argc, argv);
    std::string sock_path, veth_in, veth_out, listen_host = "127.0.0.1", token_file;
    int tcp_port = 0;
    bool test_commands = false;
    double in_gbps = 10, drain_gbps = 4, live_drain_mbps = 0;
    for (int i = 1; i < argc; i++) {
        std::string a = argv[i];
        auto next = [&]() -> std::string {
            if (i + 1 >= argc) {
                fprintf(stderr, "sp_sim: %s needs a value\n", a.c_str());
                exit(2);
            }
            return argv[++i];
        };
        if (a == "--socket") sock_path = next();
        else if (a == "--tcp") tcp_port = std::stoi(next());
        else if (a == "--listen-host") listen_host = next();
        else if (a == "--token-file") token_file = next();
        else if (a == "--test-commands") test_commands = true;
        else if (a == "--ingress-gbps") in_gbps = std::stod(next());
        else if (a == "--drain-gbps") drain_gbps = std::stod(next());
        else if (a == "--veth-in") veth_in = next();
        else if (a == "--veth-out") veth_out = next();
        else if (a == "--live-drain-mbps") live_drain_mbps = std::stod(next());
        else if (a[0] != '+') {
            fprintf(stderr, "sp_sim: unknown option %s\n", a.c_str());
            return 2;
        }
    }
    if (sock_path.empty() && tcp_port == 0) {
        fprintf(stderr, "usage: sp_sim --socket PATH [--tcp PORT [--listen-host ADDR]] [--token-file F "
                        "[--test-commands]] [--ingress-gbps G] [--drain-gbps G] "
                        "[--veth-in IF --veth-out IF [--live-drain-mbps M]]\n");
        return 2;
    }
    ListenAddr tcp_at;
    if (tcp_port && (tcp_port < 1 || tcp_port > 65535 || !parse_listen_host(listen_host, tcp_port, tcp_at))) {
        fprintf(stderr, "sp_sim: --listen-host %s --tcp %d: need an IPv4 or IPv6 address and a port in 1..65535\n",
                listen_host.c_str(), tcp_port);
        return 2;
    }
    // Register writes decide where every packet goes: beyond this host, only with a token.
    if (tcp_port && !tcp_at.loopback && token_file.empty()) {
        fprintf(stderr, "sp_sim: --listen-host %s is reachable from other hosts: give --token-file\n",
                listen_host.c_str());
        return 2;
    }
    if (in_gbps <= 0 || drain_gbps <= 0 || live_drain_mbps < 0) {
        fprintf(stderr, "sp_sim: rates must be positive\n");
        return 2;
    }
    std::signal(SIGTERM, on_signal);
    std::signal(SIGINT, on_signal);
    std::signal(SIGPIPE, SIG_IGN);

    Harness h(gbps_to_bytes_per_cycle(in_gbps), gbps_to_bytes_per_cycle(drain_gbps));
    h.set_wall_drain(live_drain_mbps * 1e6 / 8.0);
    Server srv(h);
    if (!token_file.empty()) srv.token = read_token(token_file);
    srv.test_commands = test_commands;
    int lfd_unix = sock_path.empty() ? -1 : listen_unix(sock_path);
    int lfd_tcp = tcp_port ? listen_tcp(tcp_at) : -1;
    if ((!sock_path.empty() && lfd_unix < 0) || (tcp_port && lfd_tcp < 0)) {
        fprintf(stderr, "sp_sim: cannot listen: %s\n", strerror(errno));
        return 1;
    }
    int fd_in = -1, fd_out = -1;
    if (!veth_in.empty() || !veth_out.empty()) {
        fd_in = open_packet_socket(veth_in.c_str());
        fd_out = open_packet_socket(veth_out.c_str());
        if (fd_in < 0 || fd_out < 0) {
            fprintf(stderr, "sp_sim: cannot open AF_PACKET on %s / %s: %s\n", veth_in.c_str(), veth_out.c_str(),
                    strerror(errno));
            return 1;
        }
    }
    fprintf(stderr, "sp_sim: ready\n");

    std::vector<std::vector<uint8_t>> frames;
    while (!g_stop && !srv.quit) {
        std::vector<pollfd> fds;
        if (lfd_unix >= 0) fds.push_back({lfd_unix, POLLIN, 0});
        if (lfd_tcp >= 0) fds.push_back({lfd_tcp, POLLIN, 0});
        for (auto& c : srv.clients) fds.push_back({c.fd, POLLIN, 0});
        if (fd_in >= 0) fds.push_back({fd_in, POLLIN, 0});
        if (fd_out >= 0) fds.push_back({fd_out, POLLIN, 0});
        bool live = fd_in >= 0 && h.busy();
        int timeout = live ? 0 : 20;
        if (fd_in >= 0 && !live) {
            double wait = h.wall_wait_s();  // a queued frame waits for the wall-clock drain
            if (wait >= 0) timeout = std::min(timeout, std::max(1, static_cast<int>(wait * 1000) + 1));
        }
        if (poll(fds.data(), fds.size(), timeout) < 0 && errno != EINTR) break;
        for (auto& p : fds) {
            if (!(p.revents & (POLLIN | POLLHUP))) continue;
            if (p.fd == lfd_unix || p.fd == lfd_tcp) {
                srv.accept_from(p.fd);
            } else if (p.fd != fd_in && p.fd != fd_out) {
                srv.on_readable(p.fd);
            } else if (p.fd == fd_in || p.fd == fd_out) {
                frames.clear();
                read_frames(p.fd, frames);
                for (auto& f : frames) {
                    Packet pkt;
                    pkt.data = std::move(f);
                    pkt.src_port = p.fd == fd_in ? 0x01 : 0x02;
                    if (!pkt.data.empty() && pkt.data.size() <= 0xFFFF) h.inject(std::move(pkt), 0);
                }
            }
        }
        if (fd_in >= 0) {
            // Free-running: clock while anything is in flight, then hand frames out.
            h.run_live(200000);
            for (auto& p : h.dma_out) (void)!send(fd_out, p.data.data(), p.data.size(), 0);
            for (auto& p : h.phys_out) (void)!send(fd_in, p.data.data(), p.data.size(), 0);
            if (srv.capture.dump)
                for (auto& p : h.dma_out) srv.capture.write(p);
            h.dma_out.clear();
            h.phys_out.clear();
        }
    }
    srv.capture.close();
    if (!sock_path.empty()) unlink(sock_path.c_str());
    return 0;
}
