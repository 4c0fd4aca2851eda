"""Live sender: a scenario onto an interface at a set rate, stamped at send time.

Frames go out through an AF_PACKET raw socket. The rate is a token bucket on
CLOCK_MONOTONIC (``burst`` tokens deep, so a late wake-up is caught up by at most a
burst); each frame's payload carries CLOCK_REALTIME ns read just before its ``send``,
the clock the meter's kernel receive stamps use, so one-way delay needs no clock sync
between sender and meter on the same machine. Flows are sent in round robin.

A send the kernel refuses with ENOBUFS (a qdisc dropping under its limit) still consumes
its sequence number and counts as sent: the network lost it, and the meter reports it as
lost, which is how an injected drop shows up end to end. The sender's own ceiling
(``rate_pps=None``: no pacing) is measured by bench/traffic_sender.py.
"""

from __future__ import annotations

import errno
import socket
import time
from collections.abc import MutableSequence, Sequence
from typing import Protocol

from sliceportal.traffic import netns
from sliceportal.traffic.packets import Underlay
from sliceportal.traffic.pcapgen import SentReport
from sliceportal.traffic.profiles import Profile
from sliceportal.traffic.scenarios import DEFAULT_UNDERLAY, ScenarioError, ScenarioFlow
from sliceportal.traffic.templates import make_templates

SNDBUF_BYTES = 16 << 20
SO_SNDBUFFORCE = 32  # not exported by the socket module
SPIN_BELOW_NS = 20_000  # shorter waits spin; longer ones sleep (and free the GIL and the CPU)


class StopFlag(Protocol):
    """What tells a sender to stop: a ``threading.Event``, or a ``multiprocessing`` one when
    the sender is a process of its own (the live testbed's)."""

    def is_set(self) -> bool: ...


class SendError(OSError):
    """An interface the sender cannot open or write to."""


def open_sender(iface: str, namespace: str | None = None) -> socket.socket:
    try:
        with netns.entered(namespace):
            sock = socket.socket(socket.AF_PACKET, socket.SOCK_RAW, 0)
            try:
                try:
                    sock.setsockopt(socket.SOL_SOCKET, SO_SNDBUFFORCE, SNDBUF_BYTES)
                except PermissionError:
                    sock.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, SNDBUF_BYTES)
                sock.bind((iface, 0))
            except OSError:
                sock.close()
                raise
    except OSError as exc:
        raise SendError(f"cannot send on {iface!r} (namespace {namespace}): {exc}") from exc
    return sock


class SendResult(SentReport):
    """``SentReport`` plus what only a live send has."""

    tx_refused: int  # sends the kernel refused with ENOBUFS (counted as sent and lost)
    rate_pps: float | None  # the rate asked for


def send(
    sock: socket.socket,
    flows: Sequence[ScenarioFlow],
    *,
    rate_pps: float | None,
    packets: int | None = None,
    duration_s: float | None = None,
    burst: int | None = None,
    stop: StopFlag | None = None,
    underlay: Underlay = DEFAULT_UNDERLAY,
    progress: MutableSequence[int] | None = None,
) -> SendResult:
    """Send ``flows`` round robin at ``rate_pps`` (None: as fast as possible) until
    ``packets`` are sent, ``duration_s`` passes or ``stop`` is set. ``progress`` (one zero
    per flow) is kept up to date with the packets sent per flow, for a caller that reads
    it while this runs (the live testbed's meters)."""
    if not flows:
        raise ScenarioError("no flows to send")
    if packets is None and duration_s is None and stop is None:
        raise ScenarioError("give packets, duration_s or stop, or the sender never ends")
    if rate_pps is not None and not rate_pps > 0:
        raise ScenarioError(f"rate must be > 0 packets/s, got {rate_pps}")
    if burst is None:
        # 20 ms of tokens: rides out sleep overshoot, a GIL hand-over or a scheduler tick
        # on a busy machine without losing rate (at the price of a burst after a stall).
        burst = max(32, int((rate_pps or 0) * 0.02))
    if burst < 1:
        raise ScenarioError(f"burst must be >= 1, got {burst}")
    templates = make_templates(flows, underlay)
    seqs = progress if progress is not None and len(progress) == len(flows) else [0] * len(flows)
    budget = packets if packets is not None else -1
    n = refused = total_bytes = 0
    idx = 0
    n_flows = len(flows)
    wall = time.time_ns
    mono = time.monotonic_ns
    write = sock.send
    start_mono = mono()
    end_mono = None if duration_s is None else start_mono + int(duration_s * 1e9)
    first_ns = last_ns = 0
    tokens = 1.0  # no initial burst: the first packets already go at the set rate
    refill = mono()
    per_ns = (rate_pps or 0.0) / 1e9
    while n != budget:
        now = mono()
        if end_mono is not None and now >= end_mono:
            break
        if stop is not None and stop.is_set():
            break
        if rate_pps is None:
            allowed = 32
        else:
            tokens = min(float(burst), tokens + (now - refill) * per_ns)
            refill = now
            if tokens < 1.0:
                wait = (1.0 - tokens) / per_ns
                if wait > SPIN_BELOW_NS:
                    # sleep overshoots by ~60-100 µs; the bucket's tokens make up for it
                    time.sleep(wait / 1e9)
                continue
            allowed = int(tokens)
            tokens -= allowed
        if budget >= 0:
            allowed = min(allowed, budget - n)
        for _ in range(allowed):
            tpl = templates[idx]
            t = wall()
            frame = tpl.frame_at(seqs[idx], t)
            try:
                write(frame)
            except OSError as exc:
                if exc.errno != errno.ENOBUFS:
                    raise SendError(f"send failed after {n} packets: {exc}") from exc
                refused += 1
            if n == 0:
                first_ns = t
            last_ns = t
            seqs[idx] += 1
            total_bytes += len(frame)
            n += 1
            idx += 1
            if idx == n_flows:
                idx = 0
    return SendResult(
        packets=n,
        bytes=total_bytes,
        first_ns=first_ns,
        last_ns=last_ns,
        sent={sf.flow_id: seqs[i] for i, sf in enumerate(flows) if seqs[i]},
        tx_refused=refused,
        rate_pps=rate_pps,
    )


def send_profile(
    sock: socket.socket,
    flows: Sequence[ScenarioFlow],
    profile: Profile,
    *,
    packets: int | None = None,
    duration_s: float | None = None,
    stop: StopFlag | None = None,
    underlay: Underlay = DEFAULT_UNDERLAY,
) -> SendResult:
    """Send ``flows`` on a profile's schedule (bursts, per-service rates) live.

    Each packet leaves when its scheduled offset from the start comes (sleeping or spinning
    until then) and is stamped when it leaves; a sender that fell behind sends at once, so
    a burst stays a burst. The schedule ends at ``packets`` or at offset ``duration_s``.
    """
    if not flows:
        raise ScenarioError("no flows to send")
    if packets is None and duration_s is None:
        raise ScenarioError("give packets and/or duration_s, or the sender never ends")
    templates = make_templates(flows, underlay)
    seqs = [0] * len(flows)
    budget = packets if packets is not None else -1
    limit_ns = None if duration_s is None else int(duration_s * 1e9)
    n = refused = total_bytes = 0
    first_ns = last_ns = 0
    wall, mono, write = time.time_ns, time.monotonic_ns, sock.send
    start = mono()
    for i, offset in profile.schedule(len(flows)):
        if n == budget or (limit_ns is not None and offset >= limit_ns):
            break
        if stop is not None and stop.is_set():
            break
        wait = start + offset - mono()
        if wait > SPIN_BELOW_NS:
            time.sleep((wait - SPIN_BELOW_NS) / 1e9)
        while mono() < start + offset:
            pass
        t = wall()
        frame = templates[i].frame_at(seqs[i], t)
        try:
            write(frame)
        except OSError as exc:
            if exc.errno != errno.ENOBUFS:
                raise SendError(f"send failed after {n} packets: {exc}") from exc
            refused += 1
        if n == 0:
            first_ns = t
        last_ns = t
        seqs[i] += 1
        total_bytes += len(frame)
        n += 1
    return SendResult(
        packets=n,
        bytes=total_bytes,
        first_ns=first_ns,
        last_ns=last_ns,
        sent={sf.flow_id: seqs[i] for i, sf in enumerate(flows) if seqs[i]},
        tx_refused=refused,
        rate_pps=None,
    )
