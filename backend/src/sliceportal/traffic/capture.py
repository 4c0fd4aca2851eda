"""Feed a ``Meter`` from a pcap file or live from an interface (AF_PACKET).

Receive times: a pcap's record time (ns or µs resolution, as the file says); live, the
kernel's receive timestamp (SO_TIMESTAMPNS, CLOCK_REALTIME), taken when the frame entered
the stack, so time spent queued in our socket buffer is not counted as network delay.
"""

from __future__ import annotations

import csv
import select
import socket
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from scapy.error import Scapy_Exception
from scapy.utils import RawPcapNgReader, RawPcapReader

from sliceportal.traffic import netns
from sliceportal.traffic.meter import Meter, MeterReport, cycles_to_ns
from sliceportal.traffic.wire import locate

ETH_P_ALL = 0x0003
SO_TIMESTAMPNS = 35  # also the SCM type of the ancillary message
SO_RCVBUFFORCE = 33  # not exported by the socket module
PACKET_OUTGOING = 4
_TIMESPEC = struct.Struct("@qq")
_MAX_FRAME = 65536
# a burst at the sender's ceiling (~280 k frames/s for 2 s, ~1.5 KB of kernel memory each)
# waits here while the meter catches up; 64 MB overflowed in the seed 001 bench
RCVBUF_BYTES = 512 << 20
SOL_PACKET = 263
PACKET_STATISTICS = 6
_TPACKET_STATS = struct.Struct("@II")  # tp_packets, tp_drops (reset by each read)
DRAIN_BATCH = 4096


class CaptureError(OSError):
    """An interface or file the meter cannot read."""


def measure_pcap(path: Path, meter: Meter) -> int:
    """Add every frame of a pcap / pcapng file to ``meter``; returns the frames read."""
    try:
        reader = RawPcapReader(str(path))
    except (OSError, Scapy_Exception) as exc:
        raise CaptureError(f"cannot read capture {path}: {exc}") from exc
    recv_ns: Callable[[Any], int]
    if isinstance(reader, RawPcapNgReader):

        def recv_ns(ng: Any) -> int:  # scapy types it as the pcap metadata; pcapng's has other fields
            return int(((ng.tshigh << 32) | ng.tslow) * 1_000_000_000 // ng.tsresol)

    else:
        scale = 1 if getattr(reader, "nano", False) else 1000

        def recv_ns(meta: Any) -> int:
            return int(meta.sec * 1_000_000_000 + meta.usec * scale)

    frames = 0
    add, foreign = meter.add, meter.add_foreign
    with reader:
        for frame, meta in reader:
            frames += 1
            found = locate(frame)
            if found is None:
                foreign()
                continue
            add(found[0], found[1], found[2], recv_ns(meta), len(frame))
    return frames


def measure_cycle_capture(pcap: Path, cycles_csv: Path, meter: Meter, clock_hz: float = 200e6) -> int:
    """Add a NetFPGA simulator capture to ``meter`` with delays from simulated clock cycles.

    ``sp_sim``'s ``CAPTURE out.pcap`` writes the DMA-side frames and ``out.pcap.csv`` with one
    row per frame, in the same order (in_cycle, out_cycle, len, rr_path, lane, slice_id); a
    frame's one-way delay is (out_cycle - in_cycle) / clock_hz. Returns the frames read.
    """
    try:
        with cycles_csv.open(newline="") as fh:
            rows = [(int(r["in_cycle"]), int(r["out_cycle"])) for r in csv.DictReader(fh)]
        reader = RawPcapReader(str(pcap))
    except (OSError, KeyError, ValueError, TypeError, Scapy_Exception) as exc:
        raise CaptureError(f"cannot read simulator capture {pcap} / {cycles_csv}: {exc}") from exc
    frames = 0
    with reader:
        for frame, _meta in reader:
            if frames >= len(rows):
                raise CaptureError(f"{pcap} has more frames than {cycles_csv} has rows ({len(rows)})")
            in_cycle, out_cycle = rows[frames]
            meter.add_frame(frame, recv_ns=cycles_to_ns(out_cycle, clock_hz), send_ns=cycles_to_ns(in_cycle, clock_hz))
            frames += 1
    if frames != len(rows):
        raise CaptureError(f"{cycles_csv} has {len(rows)} rows for {frames} frames in {pcap}")
    return frames


def open_capture(iface: str, namespace: str | None = None) -> socket.socket:
    """A raw AF_PACKET socket on ``iface`` with kernel receive timestamps and a large buffer.

    Open it before the sender starts so that no early packet is missed.
    """
    try:
        with netns.entered(namespace):
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, socket.htons(ETH_P_ALL))
            try:
                sock.setsockopt(socket.SOL_SOCKET, SO_TIMESTAMPNS, 1)
                try:  # beyond rmem_max needs CAP_NET_ADMIN; fall back quietly
                    sock.setsockopt(socket.SOL_SOCKET, SO_RCVBUFFORCE, RCVBUF_BYTES)
                except PermissionError:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, RCVBUF_BYTES)
                sock.bind((iface, ETH_P_ALL))
            except OSError:
                sock.close()
                raise
    except OSError as exc:
        raise CaptureError(f"cannot capture on {iface!r} (namespace {namespace}): {exc}") from exc
    return sock


@dataclass(slots=True)
class CaptureStats:
    frames: int = 0
    outgoing_skipped: int = 0
    socket_drops: int = 0  # frames the kernel dropped because our socket buffer was full


def socket_drops(sock: socket.socket) -> int:
    """Frames dropped at this AF_PACKET socket since the last call (PACKET_STATISTICS).

    These are the meter's own losses, not the network's: a report with socket drops
    overstates loss by up to that many packets.
    """
    raw = sock.getsockopt(SOL_PACKET, PACKET_STATISTICS, _TPACKET_STATS.size)
    _packets, drops = _TPACKET_STATS.unpack(raw)
    return int(drops)


def run_capture(
    sock: socket.socket,
    meter: Meter,
    *,
    duration_s: float | None = None,
    idle_s: float | None = None,
    stop: threading.Event | None = None,
    interval_s: float | None = None,
    on_interval: Callable[[MeterReport], None] | None = None,
    on_foreign: Callable[[bytes, int], None] | None = None,
) -> CaptureStats:
    """Read ``sock`` into ``meter`` until ``duration_s`` passes, ``idle_s`` passes without a
    frame after the first one, or ``stop`` is set. Frames we sent ourselves are skipped.

    With ``interval_s`` and ``on_interval``, every ``interval_s`` the meter's
    ``interval_report`` goes to ``on_interval`` (the KPI service's per-second samples); the
    callback runs on this thread, so it must hand the report off rather than block.
    ``on_foreign`` gets each frame the meter does not count as ours, with its kernel receive
    time (the testbed's STAMP reflector looks for its probes among them), on this thread too.
    """
    if (interval_s is None) != (on_interval is None):
        raise ValueError("give both interval_s and on_interval, or neither")
    if interval_s is not None and not interval_s > 0:
        raise ValueError(f"interval_s must be > 0, got {interval_s}")
    stats = CaptureStats()
    buf = bytearray(_MAX_FRAME)
    view = memoryview(buf)
    anc = socket.CMSG_SPACE(_TIMESPEC.size)
    deadline = None if duration_s is None else time.monotonic() + duration_s
    last_frame = time.monotonic()
    next_interval = None if interval_s is None else last_frame + interval_s
    sock.setblocking(False)
    while True:
        now = time.monotonic()
        if next_interval is not None and on_interval is not None and interval_s is not None and now >= next_interval:
            on_interval(meter.interval_report())
            next_interval += interval_s
            if next_interval < now:  # a slow callback: skip the intervals it overran
                next_interval = now + interval_s
        if stop is not None and stop.is_set():
            break
        if deadline is not None and now >= deadline:
            break
        if idle_s is not None and stats.frames and now - last_frame >= idle_s:
            break
        ready, _, _ = select.select([sock], [], [], 0.05)
        if not ready:
            continue
        for _ in range(DRAIN_BATCH):  # drain what is queued, but look at the clocks now and then
            try:
                n, ancdata, _, addr = sock.recvmsg_into([buf], anc)
            except BlockingIOError:
                break
            if addr[2] == PACKET_OUTGOING:
                stats.outgoing_skipped += 1
                continue
            stats.frames += 1
            recv_ns = _kernel_time(ancdata)
            frame = bytes(view[:n])
            if not meter.add_frame(frame, recv_ns) and on_foreign is not None:
                on_foreign(frame, recv_ns)
        last_frame = time.monotonic()
    stats.socket_drops = socket_drops(sock)
    return stats


def _kernel_time(ancdata: list[tuple[int, int, bytes]]) -> int:
    for level, kind, data in ancdata:
        if level == socket.SOL_SOCKET and kind == SO_TIMESTAMPNS and len(data) >= _TIMESPEC.size:
            sec, nsec = _TIMESPEC.unpack_from(data)
            return int(sec * 1_000_000_000 + nsec)
    return time.time_ns()  # the kernel gave no stamp: the best we have is now
