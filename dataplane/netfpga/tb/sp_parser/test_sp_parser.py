"""sp_parser: the innermost key on every header combination, options, GTP-U extension
headers, non-IPv4, every truncation point, too-deep nesting, back-pressure."""

from __future__ import annotations

import itertools
import random
import struct
from dataclasses import dataclass
from itertools import cycle

import cocotb
import netfpga_tb as ntb
import pytest
from cocotb.triggers import ClockCycles, ReadOnly, RisingEdge
from cocotbext.axi import AxiStreamFrame
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.inet import IP, UDP
from scapy.layers.l2 import ARP, Ether
from scapy.packet import Raw

from sliceportal.rules.ir import FlowKey
from sliceportal.traffic.packets import Encap, Flow, build_bytes

MALFORMED_BIT = 58


@dataclass(frozen=True)
class Seen:
    key: int
    key_valid: bool
    malformed: bool


def key_of(k: FlowKey) -> int:
    return (k.src_ip << 54) | (k.dst_ip << 22) | (k.dscp << 16) | k.dst_port


class TB:
    def __init__(self, dut: object) -> None:
        self.dut = dut
        ntb.start_clock(dut)
        self.source = ntb.stream_source(dut)
        self.sink = ntb.stream_sink(dut)
        self.seen: list[Seen] = []
        cocotb.start_soon(self._monitor())

    async def _monitor(self) -> None:
        d = self.dut
        first = True
        while True:
            await RisingEdge(d.clk)
            await ReadOnly()
            if d.m_axis_tvalid.value and d.m_axis_tready.value:
                if first:
                    self.seen.append(
                        Seen(
                            int(d.m_key.value),
                            bool(d.m_key_valid.value),
                            bool((int(d.m_axis_tuser.value) >> MALFORMED_BIT) & 1),
                        )
                    )
                first = bool(d.m_axis_tlast.value)

    async def reset(self) -> None:
        await ntb.reset(self.dut)

    async def run(self, packets: list[bytes]) -> list[Seen]:
        start = len(self.seen)
        for p in packets:
            await self.source.send(AxiStreamFrame(p, tuser=ntb.tuser(len(p), ntb.NF0)))
        for p in packets:
            out = await self.sink.recv()
            assert bytes(out.tdata) == p, "the parser must pass packets through unchanged"
        await ClockCycles(self.dut.clk, 2)
        return self.seen[start:]

    async def counters(self) -> tuple[int, int, int]:
        d = self.dut
        return int(d.cnt_packets.value), int(d.cnt_malformed.value), int(d.cnt_non_ipv4.value)


def flows() -> list[Flow]:
    rng = random.Random(3)
    out = []
    for encap, vlan, proto in itertools.product(Encap, (None, 100), ("udp", "tcp")):
        out.append(
            Flow(
                src_ip=f"10.{rng.randrange(256)}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                dst_ip=f"192.168.{rng.randrange(256)}.{rng.randrange(1, 255)}",
                dst_port=rng.choice([5000, 5008, 5030, 80, 65535]),
                dscp=rng.randrange(64),
                proto=proto,
                vni=rng.randrange(1 << 24),
                teid=rng.getrandbits(32),
                vlan=vlan,
                encap=encap,
            )
        )
    return out


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def every_header_combination(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    fl = flows()
    seen = await tb.run([build_bytes(f, b"payload-" * 4) for f in fl])
    for f, s in zip(fl, seen, strict=True):
        assert s == Seen(key_of(f.key()), True, False), f


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def options_and_gtp_extension_headers(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    inner = IP(src="10.1.2.3", dst="10.9.9.9", tos=46 << 2, options=b"\x01" * 8) / UDP(dport=5016) / Raw(b"x" * 20)
    gtp_ext = (
        Ether()
        / IP(src="10.20.0.1", dst="10.20.0.2", options=b"\x01" * 4)
        / UDP(sport=2152, dport=2152)
        / GTP_U_Header(teid=7, gtp_type=255, E=1, next_ex=0x85)
        / GTPPDUSessionContainer(type=1, QFI=5)
        / inner
    )
    echo = Ether() / IP(src="10.20.0.1", dst="10.20.0.2") / UDP(sport=2152, dport=2152) / GTP_U_Header(gtp_type=1)
    seen = await tb.run([bytes(gtp_ext), bytes(echo)])
    want = (0x0A010203 << 54) | (0x0A090909 << 22) | (46 << 16) | 5016
    assert seen[0] == Seen(want, True, False)
    # GTP-U signalling carries no user packet: the tunnel's own headers are the innermost.
    assert seen[1] == Seen((0x0A140001 << 54) | (0x0A140002 << 22) | 2152, True, False)


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def non_ipv4_and_too_deep(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    arp = bytes(Ether() / ARP())
    hdr_bytes = ntb.param("HDR_BYTES", 192)
    inner = bytes(IP(src="10.0.0.1", dst="10.0.0.2") / UDP(dport=5000) / Raw(b"z" * 64))

    def gtp_with_extension(words: int) -> bytes:
        # A GTP-U extension header of `words` 4-byte units (length byte, body, next type 0).
        ext = bytes([words]) + bytes(words * 4 - 2) + b"\x00"
        body = ext + inner
        gtp = struct.pack("!BBHIHBB", 0x34, 0xFF, 4 + len(body), 7, 0, 0, 0x85)
        return bytes(Ether() / IP(src="10.20.0.1", dst="10.20.0.2") / UDP(sport=2152, dport=2152) / Raw(gtp + body))

    # Innermost L4 port inside the window: parsed; pushed past the window: malformed.
    fits = (hdr_bytes - 14 - 20 - 8 - 12 - 20 - 4) // 4
    seen = await tb.run([arp, gtp_with_extension(fits), gtp_with_extension(fits + 1)])
    assert (seen[0].key_valid, seen[0].malformed) == (False, False)
    assert seen[1] == Seen((0x0A000001 << 54) | (0x0A000002 << 22) | 5000, True, False)
    assert (seen[2].key_valid, seen[2].malformed) == (False, True)
    assert await tb.counters() == (3, 1, 1)


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def every_truncation_point(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    for f in flows()[::2]:
        # docs/packets.md: a frame cut anywhere, the payload included (the IPv4 total
        # length is beyond the frame), is malformed; only the whole packet is classified
        full = build_bytes(f, b"p" * 8)
        cuts = list(range(1, len(full) + 1))
        seen = await tb.run([full[:n] for n in cuts])
        for n, s in zip(cuts, seen, strict=True):
            if n == len(full):
                assert s == Seen(key_of(f.key()), True, False), (f, n)
            else:
                assert (s.key_valid, s.malformed) == (False, True), (f, n)


@cocotb.test(timeout_time=1, timeout_unit="ms")  # a hang fails fast, not at pytest's timeout
async def back_pressure_and_idle(dut: object) -> None:
    tb = TB(dut)
    await tb.reset()
    tb.source.set_pause_generator(cycle([0, 1, 0, 0, 1]))
    tb.sink.set_pause_generator(cycle([1, 1, 0, 1, 0, 0, 0]))
    fl = flows() * 3
    rng = random.Random(9)
    pkts = [build_bytes(f, bytes(rng.randrange(0, 1400))) for f in fl]
    seen = await tb.run(pkts)
    assert [s.key for s in seen] == [key_of(f.key()) for f in fl]


@pytest.mark.parametrize("hdr_bytes", [192, 256])
def test_sp_parser(cocotb_run, hdr_bytes: int) -> None:  # type: ignore[no-untyped-def]
    cocotb_run("sp_parser", __file__, {"HDR_BYTES": hdr_bytes})
