"""Per-flow frame templates: built once with scapy, then stamped per packet in place.

Building a nested packet with scapy costs tens of microseconds; stamping the sequence
number and send time into a copy of a prebuilt frame costs well under one. The innermost
L4 checksum is kept valid by an incremental update (RFC 1624): the template carries zeros
where the stamp goes, so the new checksum only adds the stamped words, and the one's
complement sum of 16-bit words of an integer is that integer modulo 0xFFFF.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from sliceportal.traffic.framepatch import zero_stamp_frames
from sliceportal.traffic.packets import PAYLOAD_HEADER, Underlay, build_bytes, payload
from sliceportal.traffic.scenarios import DEFAULT_UNDERLAY, ScenarioError, ScenarioFlow
from sliceportal.traffic.scenarios import header_len as scenario_header_len

# Offsets inside the payload header "!HIQQ": magic, flow id, sequence, send time.
SEQ_OFFSET = 6
SEND_NS_OFFSET = 14
_U64 = (1 << 64) - 1


_STAMP = struct.Struct("!QQ")
_CSUM = struct.Struct("!H")


@dataclass(frozen=True, slots=True)
class Template:
    flow_id: int
    frame: bytes  # the whole frame with sequence 0 and send time 0
    stamp_offset: int  # where the payload header starts in ``frame``
    csum_offset: int | None  # innermost L4 checksum; None when it is absent (UDP checksum 0)
    csum_sum: int  # one's complement sum (mod 0xFFFF) the template's checksum covers
    is_udp: bool
    # The frame cut around the bytes that change per packet, so a packet is one join.
    head: bytes = b""
    mid: bytes = b""
    tail: bytes = b""

    def checksum(self, seq: int, send_ns: int) -> int:
        """The innermost L4 checksum of the packet stamped with ``seq`` / ``send_ns``."""
        total = (self.csum_sum + seq + send_ns) % 0xFFFF or 0xFFFF
        csum = 0xFFFF - total
        # UDP: 0 means "no checksum"; 0xFFFF is the same value in one's complement.
        return 0xFFFF if self.is_udp and csum == 0 else csum

    def parts_at(self, seq: int, send_ns: int) -> tuple[bytes, bytes, bytes, bytes, bytes]:
        """The frame stamped with ``seq`` / ``send_ns`` as five pieces (joined by the writer)."""
        seq &= _U64
        send_ns &= _U64
        if self.csum_offset is None:
            return (self.head, b"", b"", _STAMP.pack(seq, send_ns), self.tail)
        return (
            self.head,
            _CSUM.pack(self.checksum(seq, send_ns)),
            self.mid,
            _STAMP.pack(seq, send_ns),
            self.tail,
        )

    def frame_at(self, seq: int, send_ns: int) -> bytes:
        """This flow's frame with ``seq`` and ``send_ns`` stamped and its checksum fixed."""
        return b"".join(self.parts_at(seq, send_ns))


def make_template(sf: ScenarioFlow, underlay: Underlay = DEFAULT_UNDERLAY) -> Template:
    """One flow's template, built by scapy (the reference; ``make_templates`` for many)."""
    size = sf.frame_size - scenario_header_len(sf.flow, underlay)
    if size < PAYLOAD_HEADER.size:
        raise ScenarioError(f"frame size {sf.frame_size} B leaves no room for the payload header")
    return _from_frame(sf, build_bytes(sf.flow, payload(sf.flow_id, 0, 0, size), underlay), underlay)


def make_templates(flows: Sequence[ScenarioFlow], underlay: Underlay = DEFAULT_UNDERLAY) -> list[Template]:
    """Templates of many flows: one scapy build per shape, the rest patched (``framepatch``)."""
    for sf in flows:
        if sf.frame_size - scenario_header_len(sf.flow, underlay) < PAYLOAD_HEADER.size:
            raise ScenarioError(f"frame size {sf.frame_size} B leaves no room for the payload header")
    frames = zero_stamp_frames(flows, underlay)
    return [_from_frame(sf, frame, underlay) for sf, frame in zip(flows, frames, strict=True)]


def _from_frame(sf: ScenarioFlow, frame: bytes, underlay: Underlay) -> Template:
    header_len = scenario_header_len(sf.flow, underlay)
    is_udp = sf.flow.proto != "tcp"
    # build() ends in a UDP (8 B) or option-less TCP (20 B) header right before the payload.
    l4_offset = header_len - (8 if is_udp else 20)
    stamp_offset = header_len
    seq_at = stamp_offset + SEQ_OFFSET
    after = seq_at + _STAMP.size
    csum_offset = l4_offset + (6 if is_udp else 16)
    csum = int.from_bytes(frame[csum_offset : csum_offset + 2], "big")
    if is_udp and csum == 0:
        return Template(sf.flow_id, frame, stamp_offset, None, 0, is_udp, frame[:seq_at], b"", frame[after:])
    return Template(
        flow_id=sf.flow_id,
        frame=frame,
        stamp_offset=stamp_offset,
        csum_offset=csum_offset,
        csum_sum=0xFFFF - csum,  # the sum the stored checksum complements
        is_udp=is_udp,
        head=frame[:csum_offset],
        mid=frame[csum_offset + 2 : seq_at],
        tail=frame[after:],
    )
