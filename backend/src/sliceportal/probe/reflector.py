"""The STAMP Session-Reflector, stateless (RFC 8762 §4.3, §4.3.1).

Stateless: nothing is kept between packets; the reply's sequence number is the received one
(§4.3.1), so any number of senders can share one reflector. The receive timestamp (t2) is the
kernel's; the transmit timestamp (t3) is taken just before the reply is handed to the kernel,
so t3 - t2 is the reflector's residence time the sender subtracts. The reply carries the
test packet's DSCP back (the return path classifies the probe into the same lane) and is as
long as the test packet (at least 44 octets).
"""

from __future__ import annotations

import logging
import select
import threading
import time
from collections import Counter

from sliceportal.probe.sockets import receive, send_with_tos, udp_socket
from sliceportal.probe.wire import (
    ERROR_ESTIMATE,
    PACKET_SIZE,
    STAMP_PORT,
    ReflectorPacket,
    SenderPacket,
    WireError,
    ntp_from_ns,
)

log = logging.getLogger(__name__)
POLL_S = 0.2  # how soon serve() notices stop


def reply(test: SenderPacket, rx_ns: int, ttl: int, error_estimate: int = ERROR_ESTIMATE) -> ReflectorPacket:
    """The reflected test packet of ``test`` received at ``rx_ns`` (t2) with ``ttl``; its t3 is
    now, as late as Python allows: the residence time then covers our own work."""
    return ReflectorPacket(
        seq=test.seq,
        timestamp=ntp_from_ns(time.time_ns()),
        error_estimate=error_estimate,
        receive_timestamp=ntp_from_ns(rx_ns),
        sender_seq=test.seq,
        sender_timestamp=test.timestamp,
        sender_error_estimate=test.error_estimate,
        sender_ttl=ttl,
    )


class Reflector:
    def __init__(self, bind: str = "0.0.0.0", port: int = STAMP_PORT, *, error_estimate: int = ERROR_ESTIMATE) -> None:
        self.sock = udp_socket(bind, port)
        self.sock.setblocking(False)
        self.error_estimate = error_estimate
        self.reflected = 0
        self.refused = 0  # datagrams too short to be test packets
        self.dscp_seen: Counter[int] = Counter()  # of the test packets, as the kernel received them

    @property
    def port(self) -> int:
        return int(self.sock.getsockname()[1])

    def reflect_waiting(self) -> int:
        """Answer every test packet waiting on the socket; how many were answered."""
        answered = 0
        while True:
            try:
                got = receive(self.sock)
            except BlockingIOError:
                return answered
            try:
                test = SenderPacket.unpack(got.data)
            except WireError as exc:
                self.refused += 1
                log.debug("refused a datagram from %s: %s", got.peer, exc)
                continue
            size = max(len(got.data), PACKET_SIZE)
            try:
                answer = reply(test, got.rx_ns, got.ttl, self.error_estimate)
                send_with_tos(self.sock, answer.pack(size), got.peer, got.tos & 0xFC)
            except OSError as exc:  # an unreachable peer must not stop the reflector
                log.debug("reply to %s failed: %s", got.peer, exc)
                continue
            self.reflected += 1
            self.dscp_seen[got.tos >> 2] += 1
            answered += 1

    def serve(self, stop: threading.Event | None = None) -> None:
        """Reflect until ``stop`` is set (or forever)."""
        stop = stop or threading.Event()
        while not stop.is_set():
            ready, _, _ = select.select([self.sock], [], [], POLL_S)
            if ready:
                self.reflect_waiting()

    def close(self) -> None:
        self.sock.close()
