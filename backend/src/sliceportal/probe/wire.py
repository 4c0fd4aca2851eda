"""The STAMP test packets (RFC 8762 §4.2.1 and §4.3.1, unauthenticated mode), with ``struct``.

No maintained STAMP/TWAMP package exists on PyPI; the formats are fixed 44-octet layouts.
Both packets are 44 octets so that a reflected packet is as long as the one it answers
(RFC 8762 §4.2.1: the MBZ field of the sender's packet makes the two symmetric). A TWAMP-light
Session-Sender (RFC 5357 §4.1.2) sends only sequence number, timestamp and error estimate
(14 octets) and padding; the reflector reads those 14 octets and answers with at least 44.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

NTP_UNIX_OFFSET_S = 2_208_988_800  # 1900-01-01 (NTP era 0) to 1970-01-01 (Unix epoch)
STAMP_PORT = 862  # RFC 8762 §4.1: the well-known port of the Session-Reflector
PACKET_SIZE = 44  # unauthenticated sender and reflector test packets

# Session-Sender (RFC 8762 §4.2.1, Figure 2): Sequence Number (4), Timestamp (8),
# Error Estimate (2), MBZ (30)
SENDER = struct.Struct("!IQH30x")
# its first 14 octets: what a TWAMP-light sender also carries
SENDER_HEAD = struct.Struct("!IQH")
# Session-Reflector (RFC 8762 §4.3.1, Figure 4): Sequence Number (4), Timestamp (8),
# Error Estimate (2), MBZ (2), Receive Timestamp (8), Session-Sender Sequence Number (4),
# Session-Sender Timestamp (8), Session-Sender Error Estimate (2), MBZ (2),
# Ses-Sender TTL (1), MBZ (3)
REFLECTOR = struct.Struct("!IQH2xQIQH2xB3x")
TWAMP_REFLECTED_MIN = 41  # up to and including the Sender TTL
assert SENDER.size == REFLECTOR.size == PACKET_SIZE


class WireError(ValueError):
    """A datagram that is not a STAMP test packet of the expected kind."""


def ntp_from_ns(unix_ns: int) -> int:
    """The 64-bit NTP timestamp (RFC 5905: 32 bits of seconds since 1900, 32 bits of fraction)."""
    seconds, rest = divmod(unix_ns, 1_000_000_000)
    return (((seconds + NTP_UNIX_OFFSET_S) & 0xFFFF_FFFF) << 32) | ((rest << 32) // 1_000_000_000)


def ns_from_ntp(ntp: int) -> int:
    """Unix nanoseconds of an NTP timestamp of era 0 (1900-2036), rounded to the nanosecond."""
    seconds, fraction = ntp >> 32, ntp & 0xFFFF_FFFF
    return (seconds - NTP_UNIX_OFFSET_S) * 1_000_000_000 + ((fraction * 1_000_000_000 + (1 << 31)) >> 32)


def error_estimate(*, synchronized: bool = False, scale: int = 22, multiplier: int = 1) -> int:
    """RFC 4656 §4.1.2 error estimate: S (clock synchronised to UTC), Z = 0 (NTP format),
    Scale (6 bits), Multiplier (8 bits, never 0); the error is Multiplier x 2^(Scale - 32) s.
    The default claims about 1 ms and no UTC synchronisation: two-way delay needs neither."""
    if not 0 <= scale < 64:
        raise WireError("scale: 0 … 63")
    if not 1 <= multiplier < 256:
        raise WireError("multiplier: 1 … 255 (RFC 4656: must not be zero)")
    return (int(synchronized) << 15) | (scale << 8) | multiplier


ERROR_ESTIMATE = error_estimate()


@dataclass(frozen=True)
class SenderPacket:
    seq: int
    timestamp: int  # NTP
    error_estimate: int = ERROR_ESTIMATE

    def pack(self, size: int = PACKET_SIZE) -> bytes:
        """The packet, zero-padded to ``size`` octets (at least 44)."""
        if size < PACKET_SIZE:
            raise WireError(f"size: at least {PACKET_SIZE} octets")
        return SENDER.pack(self.seq, self.timestamp, self.error_estimate) + bytes(size - PACKET_SIZE)

    @classmethod
    def unpack(cls, data: bytes) -> SenderPacket:
        """A STAMP sender packet or a TWAMP-light one (at least its first 14 octets)."""
        if len(data) < SENDER_HEAD.size:
            raise WireError(f"{len(data)} octets: a test packet has at least {SENDER_HEAD.size}")
        seq, ts, err = SENDER_HEAD.unpack_from(data)
        return cls(seq, ts, err)


@dataclass(frozen=True)
class ReflectorPacket:
    seq: int
    timestamp: int  # NTP: when the reply was sent (t3)
    error_estimate: int
    receive_timestamp: int  # NTP: when the test packet was received (t2)
    sender_seq: int
    sender_timestamp: int  # NTP: the sender's transmit time (t1), copied
    sender_error_estimate: int
    sender_ttl: int  # the TTL / hop limit the test packet arrived with

    def pack(self, size: int = PACKET_SIZE) -> bytes:
        if size < PACKET_SIZE:
            raise WireError(f"size: at least {PACKET_SIZE} octets")
        return REFLECTOR.pack(
            self.seq,
            self.timestamp,
            self.error_estimate,
            self.receive_timestamp,
            self.sender_seq,
            self.sender_timestamp,
            self.sender_error_estimate,
            self.sender_ttl,
        ) + bytes(size - PACKET_SIZE)

    @classmethod
    def unpack(cls, data: bytes) -> ReflectorPacket:
        """A STAMP reflected packet, or a TWAMP-light one (RFC 5357 §4.2.1: the same first 41
        octets, then padding that may be shorter)."""
        if len(data) < TWAMP_REFLECTED_MIN:
            raise WireError(f"{len(data)} octets: a reflected packet has at least {TWAMP_REFLECTED_MIN}")
        return cls(*REFLECTOR.unpack_from(data.ljust(PACKET_SIZE, b"\0")))
