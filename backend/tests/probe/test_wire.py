"""The STAMP test packets against RFC 8762's figures (field offsets), and the per-interval
statistics against hand-computed values."""

from __future__ import annotations

import struct
from datetime import UTC, datetime

import pytest

from sliceportal.probe.sender import LaneFlow, ProbeError, percentile, summarise
from sliceportal.probe.wire import (
    PACKET_SIZE,
    ReflectorPacket,
    SenderPacket,
    WireError,
    error_estimate,
    ns_from_ntp,
    ntp_from_ns,
)


def test_ntp_timestamps() -> None:
    # RFC 5905: seconds since 1900 in the top 32 bits; the Unix epoch is 2 208 988 800 s later
    assert ntp_from_ns(0) == 2_208_988_800 << 32
    assert ntp_from_ns(1_500_000_000) == (2_208_988_801 << 32) | 0x8000_0000
    now = 1_795_000_000_123_456_789
    assert abs(ns_from_ntp(ntp_from_ns(now)) - now) <= 1  # 2^-32 s is 0.23 ns


def test_error_estimate_bits() -> None:
    # RFC 4656 §4.1.2: S | Z | Scale (6) | Multiplier (8)
    assert error_estimate(synchronized=True, scale=3, multiplier=7) == 0b1_0_000011_00000111
    assert error_estimate() >> 14 == 0  # not synchronised, NTP format
    with pytest.raises(WireError, match="multiplier"):
        error_estimate(multiplier=0)


def test_sender_packet_offsets_and_round_trip() -> None:
    p = SenderPacket(seq=0x01020304, timestamp=0x1112131415161718, error_estimate=0x8001)
    raw = p.pack()
    assert len(raw) == PACKET_SIZE == 44
    # RFC 8762 Figure 2: Sequence Number @0, Timestamp @4, Error Estimate @12, MBZ @14..43
    assert raw[0:4] == bytes.fromhex("01020304")
    assert raw[4:12] == bytes.fromhex("1112131415161718")
    assert raw[12:14] == bytes.fromhex("8001")
    assert raw[14:44] == bytes(30)
    assert SenderPacket.unpack(raw) == p
    padded = p.pack(200)
    assert len(padded) == 200 and padded[:44] == raw and SenderPacket.unpack(padded) == p
    # a TWAMP-light sender's packet: the same first 14 octets, then its own padding
    assert SenderPacket.unpack(raw[:14] + b"\xff" * 27) == p
    with pytest.raises(WireError):
        SenderPacket.unpack(raw[:13])
    with pytest.raises(WireError):
        p.pack(43)


def test_reflector_packet_offsets_and_round_trip() -> None:
    p = ReflectorPacket(
        seq=7,
        timestamp=0xA1A2A3A4A5A6A7A8,
        error_estimate=0x0116,
        receive_timestamp=0xB1B2B3B4B5B6B7B8,
        sender_seq=0xC1C2C3C4,
        sender_timestamp=0xD1D2D3D4D5D6D7D8,
        sender_error_estimate=0xE1E2,
        sender_ttl=255,
    )
    raw = p.pack()
    assert len(raw) == 44
    # RFC 8762 Figure 4
    assert struct.unpack_from("!I", raw, 0)[0] == 7
    assert raw[4:12] == bytes.fromhex("A1A2A3A4A5A6A7A8")
    assert raw[12:14] == bytes.fromhex("0116")
    assert raw[14:16] == bytes(2)  # MBZ
    assert raw[16:24] == bytes.fromhex("B1B2B3B4B5B6B7B8")  # Receive Timestamp
    assert raw[24:28] == bytes.fromhex("C1C2C3C4")  # Session-Sender Sequence Number
    assert raw[28:36] == bytes.fromhex("D1D2D3D4D5D6D7D8")  # Session-Sender Timestamp
    assert raw[36:38] == bytes.fromhex("E1E2")  # Session-Sender Error Estimate
    assert raw[38:40] == bytes(2)  # MBZ
    assert raw[40] == 255  # Ses-Sender TTL
    assert raw[41:44] == bytes(3)  # MBZ
    assert ReflectorPacket.unpack(raw) == p
    assert ReflectorPacket.unpack(raw[:41]) == p  # a TWAMP-light reflector may stop after the TTL
    with pytest.raises(WireError):
        ReflectorPacket.unpack(raw[:40])


def test_lane_specs() -> None:
    assert LaneFlow.parse("2=46") == LaneFlow(2, 46, 0)
    assert LaneFlow.parse(" 0=0:40000 ") == LaneFlow(0, 0, 40000)
    for bad in ("2", "x=1", "8=0", "2=64", "2=46:70000", "2=46:"):
        with pytest.raises(ProbeError, match="--lane"):
            LaneFlow.parse(bad)


def test_summary_by_hand() -> None:
    ts = datetime(2026, 11, 27, tzinfo=UTC)
    s = summarise(2, ts, 1.0, tx=5, delays_in_send_order=[40.0, 42.0, 41.0, 45.0], size=44)
    assert (s.tx_packets, s.rx_packets, s.tx_bytes, s.rx_bytes) == (5, 4, 220, 176)
    assert s.loss_pct == 20.0
    assert s.delay_mean_ms == 42.0
    assert s.delay_p50_ms == 41.5  # between 41 and 42
    assert s.delay_p99_ms == pytest.approx(45 - 3 * 0.03)  # rank 2.97 of [40, 41, 42, 45]
    assert s.jitter_ms == pytest.approx((2 + 1 + 4) / 3)  # |42-40|, |41-42|, |45-41| in send order
    assert s.throughput_bps == 176 * 8
    lost = summarise(0, ts, 0.5, tx=3, delays_in_send_order=[], size=44)
    assert lost.loss_pct == 100.0 and lost.delay_p50_ms is None and lost.jitter_ms is None
    one = summarise(0, ts, 1.0, tx=1, delays_in_send_order=[3.0], size=44)
    assert one.delay_p99_ms == 3.0 and one.jitter_ms is None
    assert percentile([1.0, 2.0, 3.0, 4.0, 5.0], 0.5) == 3.0
    point = s.point(slice_id=3, backend_id=1)
    assert point["source"] == "probe" and point["lane"] == 2 and point["ts"] == ts.isoformat()
