"""Rate-limit conformance of the XDP data plane with a sender the kernel paces.

The limiter runs on ``bpf_ktime_get_ns``, so it must see frames arrive in real time at
a known rate. The sender: a veth pair in a private namespace; on the sending end a
``tbf`` qdisc at the offered rate (the kernel's clock spaces the frames, ≤ two frames of
burst), fed by a blocking AF_PACKET socket (the socket's send buffer fills while tbf
holds the frames, so Python only has to stay ahead of the rate, never time anything). On
the receiving end the driver attaches the program natively (XDP on veth). What the
program saw and dropped is read from its own per-slice counters over a window after a
warm-up (the bucket's initial burst spent), so offered and passed come from one source
and the loss is a ratio of two kernel counts.

Why not BPF_PROG_TEST_RUN in paced micro-batches: on this kernel each call with
``repeat > 1`` stalls ~20-30 ms (the XDP dispatcher is swapped per call) and ``repeat
1`` costs ~0.9 ms under load, so the batches would be spaced by the harness, not by the
pacing, and a 10 ms bucket (seed 004 Enterprise) would overflow between them. The kernel
has no pktgen (CONFIG_NET_PKTGEN unset); tbf is built in.
"""

from __future__ import annotations

import os
import socket
import subprocess
import threading
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass

from sliceportal.rules.ir import Action, Match, Qos, Rule, RuleIR, SliceEntry, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes

from . import layout as L
from .dataplane import Counter
from .driver import Driver
from .netns import netns

FRAME_BYTES = 3000  # jumbo (veth MTU below): half the frames/s a 1400-byte sender needs
MTU = 3100  # native XDP on veth takes up to ~3.5 kB without multi-buffer
SENDER_BURST_S = 0.003  # tbf's bucket: timer slack under load is not lost, well inside every slice's burst


@dataclass(frozen=True)
class RatePoint:
    rate_bps: float  # configured limit
    factor: float  # asked offered / limit (tbf's rate)
    frame_bytes: int
    window_s: float
    offered: int  # frames the program saw in the window
    dropped: int  # of which the slice's bucket dropped

    @property
    def passed(self) -> int:
        return self.offered - self.dropped

    @property
    def offered_bps(self) -> float:
        return self.offered * self.frame_bytes * 8 / self.window_s

    @property
    def passed_bps(self) -> float:
        return self.passed * self.frame_bytes * 8 / self.window_s

    @property
    def loss(self) -> float:
        return self.dropped / self.offered if self.offered else 0.0


def _run(*argv: str) -> None:
    subprocess.run(argv, check=True, capture_output=True)


@contextmanager
def _wire() -> Iterator[tuple[str, str, str]]:
    ns = f"spxr-{os.getpid()}-{threading.get_ident() % 100000}"
    _run("ip", "netns", "add", ns)
    try:
        _run("ip", "-n", ns, "link", "add", "xrtx0", "type", "veth", "peer", "name", "xrrx0")
        for dev in ("xrtx0", "xrrx0"):
            _run("ip", "-n", ns, "link", "set", dev, "mtu", str(MTU))
        for dev in ("xrtx0", "xrrx0", "lo"):
            _run("ip", "-n", ns, "link", "set", dev, "up")
        yield ns, "xrtx0", "xrrx0"
    finally:
        subprocess.run(["ip", "netns", "del", ns], check=False, capture_output=True)


def _ir(rate_bps: float, burst_ms: float) -> RuleIR:
    return RuleIR(
        lanes=8,
        paths=1,
        rules=(Rule(Match(teid=Ternary.exact(7, 32)), Action(1, 1, 0)),),
        slices=(SliceEntry(1, 1, "limited", 1, None, (1,), Qos(rate_bps=int(rate_bps), burst_ms=burst_ms)),),
    )


def _blast(ns: str, dev: str, frame: bytes, stop: threading.Event) -> None:
    with netns(ns):
        s = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    with s:
        s.bind((dev, 0))
        send = s.send
        while not stop.is_set():
            for _ in range(64):
                send(frame)


def _read(d: Driver) -> tuple[Counter | None, float]:
    """Slice 1's counters (one element of slice_stats, summed over CPUs: microseconds, so
    the window's ends are sharp; without the flow cache nothing is pending elsewhere) and
    when they were read."""
    m = d.dataplane.slice_stats
    a = time.monotonic()
    raw = m.lookup(L.U32.pack(1))
    t = (a + time.monotonic()) / 2
    if raw is None:
        return None, t
    tot = [0] * L.COUNTER_FIELDS
    for off in range(0, len(raw), m.slot):
        for i, x in enumerate(L.COUNTER.unpack_from(raw, off)):
            tot[i] += x
    return Counter(*tot), t


def measure(
    cases: Sequence[tuple[float, float, float]], window_s: float = 3.0, warmup_s: float = 0.5
) -> list[RatePoint]:
    """(limit bit/s, burst ms, offered factor) per case -> the points, one slice at a time."""
    out = []
    frame = build_bytes(Flow("10.1.0.1", "10.2.0.1", 5001, teid=7, vni=1001, encap=Encap.VXLAN_GTP), b"")
    frame = build_bytes(
        Flow("10.1.0.1", "10.2.0.1", 5001, teid=7, vni=1001, encap=Encap.VXLAN_GTP), bytes(FRAME_BYTES - len(frame))
    )
    with _wire() as (ns, tx, rx):
        d = Driver(
            {
                "interface": rx,
                "netns": ns,
                "steer": "pass",
                "misses_to_alt": False,
                "overload_poll_s": 0,
                "lanes": 8,
                "paths": 1,
                "flow_cache": False,
            }
        )
        try:
            for rate_bps, burst_ms, factor in cases:
                d.apply(d.lower(_ir(rate_bps, burst_ms)), lambda _: None)
                offered = rate_bps * factor
                # tbf: the offered rate; a bucket of a few ms (a late qdisc timer under load
                # then costs no rate) but at least two frames; room for far more than the
                # socket's send buffer holds (so tbf never drops: the sender blocks instead)
                burst = max(2 * len(frame), int(offered / 8 * SENDER_BURST_S))
                _run(
                    "ip",
                    "netns",
                    "exec",
                    ns,
                    "tc",
                    "qdisc",
                    "replace",
                    "dev",
                    tx,
                    "root",
                    "tbf",
                    "rate",
                    f"{int(offered)}bit",
                    "burst",
                    str(burst),
                    "limit",
                    str(4 << 20),
                )
                stop = threading.Event()
                # two senders: each send() leaves the GIL, so both cores can feed the qdisc
                senders = [threading.Thread(target=_blast, args=(ns, tx, frame, stop), daemon=True) for _ in range(2)]
                for sender in senders:
                    sender.start()
                try:
                    time.sleep(warmup_s)
                    c0, t0 = _read(d)
                    time.sleep(window_s)
                    c1, t1 = _read(d)
                finally:
                    stop.set()
                    for sender in senders:
                        sender.join()
                assert c1 is not None, "the program saw no frame of the slice"
                p0, dr0 = (c0.packets, c0.drop_rate) if c0 else (0, 0)
                out.append(RatePoint(rate_bps, factor, len(frame), t1 - t0, c1.packets - p0, c1.drop_rate - dr0))
        finally:
            d.close()
    return out
