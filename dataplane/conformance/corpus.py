"""The cross-plane corpus: frames that exercise every rule of docs/packets.md.

Generated, never checked in: every truncation offset of every supported header stack,
IPv4 length-field lies and every IHL at every IPv4 level, IPv4 options, GTP-U extension
header chains (the PDU session container), QinQ, fragments, IPv6, non-IP, seeded random
mutations, and the seed 000 Table 3 / seed 001 Table 1 / seed 004 scenario flows.
``python -m dataplane.conformance.corpus OUT.pcap`` writes it for a look in Wireshark.
"""

from __future__ import annotations

import functools
import random
import struct
import sys
from collections.abc import Callable, Iterator
from dataclasses import dataclass

from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.inet import ICMP, IP, TCP, UDP, IPOption_NOP, IPOption_RR
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.layers.vxlan import VXLAN
from scapy.packet import Packet, Raw

from sliceportal.rules import scenarios as rules_scenarios
from sliceportal.traffic import scenarios as traffic_scenarios
from sliceportal.traffic.packets import build_bytes

SEED = 20  # issue #20; fixed so that a failure names a frame that exists in the next run too
UE = "10.0.1.33"  # slice 2, user 1 of seed 000 Table 3 (rules_scenarios.ue_ip(1, 1))
SERVER = "10.100.0.1"
TEID = 0x10000 + 1 * 32 + 1
VNI = rules_scenarios.TENANT_VNI


@dataclass(frozen=True, slots=True)
class Frame:
    name: str  # what it is and how it was made, e.g. "cut/vxlan_gtp/o=57"
    data: bytes


# ---- header stacks ------------------------------------------------------------------------


def _l4(proto: str, port: int) -> Packet:
    if proto == "tcp":
        return TCP(sport=40000, dport=port, flags="A")
    if proto == "icmp":
        return ICMP()
    return UDP(sport=40000, dport=port)


def _ue(port: int = 5004, dscp: int = 10, proto: str = "udp", options: bool = False) -> Packet:
    opts = [IPOption_RR(routers=["1.2.3.4"]), IPOption_NOP()] if options else []
    return IP(src=UE, dst=SERVER, tos=dscp << 2, options=opts) / _l4(proto, port) / Raw(b"payload!")


def _nops(opts: bool, max_opts: bool) -> list[IPOption_NOP]:
    """IPv4 options: none, 4 bytes, or the most IHL allows (40 bytes)."""
    return [IPOption_NOP()] * (40 if max_opts else 4 if opts else 0)


def _deep_ue() -> Packet:
    return IP(src=UE, dst=SERVER, tos=10 << 2, options=_nops(True, True)) / UDP(sport=1, dport=5004) / Raw(b"deep")


def _gtp(
    inner: Packet, ext: int = 0, seq: bool = False, gtp_type: int = 255, opts: bool = False, max_opts: bool = False
) -> Packet:
    g = GTP_U_Header(teid=TEID, gtp_type=gtp_type, S=1 if seq else 0)
    outer = IP(src="10.20.0.1", dst="10.20.0.2", options=_nops(opts, max_opts)) / UDP(sport=2152, dport=2152)
    if ext:
        g.E = 1
        g.next_ex = 0x85
        chain: Packet | None = None
        for i in range(ext):
            c = GTPPDUSessionContainer(type=1, QFI=5 + i, NextExtHdr=0x85 if i < ext - 1 else 0)
            chain = c if chain is None else chain / c
        assert chain is not None
        return outer / g / chain / inner
    return outer / g / inner


def _vxlan(inner: Packet, opts: bool = False, max_opts: bool = False) -> Packet:
    return (
        IP(src="10.10.0.1", dst="10.10.0.2", options=_nops(opts, max_opts))
        / UDP(sport=49152, dport=4789)
        / VXLAN(vni=VNI, flags=0x08)
        / Ether(src="02:00:00:00:01:01", dst="02:00:00:00:01:02")
        / inner
    )


def _eth(inner: Packet, tags: tuple[tuple[str, int], ...] = ()) -> Packet:
    p: Packet = Ether(src="02:00:00:00:00:01", dst="02:00:00:00:00:02")
    for kind, vid in tags:
        p = p / (Dot1AD(vlan=vid) if kind == "ad" else Dot1Q(vlan=vid))
    return p / inner


def stacks() -> dict[str, bytes]:
    """Every supported header stack once (plus the unsupported ones the spec names)."""
    s: dict[str, Packet] = {
        "plain_udp": _eth(_ue()),
        "plain_tcp": _eth(_ue(5016, 3, "tcp")),
        "plain_icmp": _eth(_ue(proto="icmp")),
        "plain_opts": _eth(_ue(options=True)),
        "vlan_udp": _eth(_ue(5008, 5), (("q", 100),)),
        "qinq_udp": _eth(_ue(5024, 7), (("ad", 300), ("q", 100))),
        "qinq_8100x2": _eth(_ue(5024, 7), (("q", 300), ("q", 100))),
        "vlan3_udp": _eth(_ue(), (("ad", 1), ("q", 2), ("q", 3))),
        "vxlan_udp": _eth(_vxlan(_ue(5000, 0))),
        "vxlan_tcp": _eth(_vxlan(_ue(5010, 2, "tcp"))),
        "vxlan_inner_vlan": _eth(
            IP(src="10.10.0.1", dst="10.10.0.2") / UDP(sport=1, dport=4789) / VXLAN(vni=VNI) / Dot1Q(vlan=5) / _ue()
        ),
        "gtp_udp": _eth(_gtp(_ue(5020, 4))),
        "gtp_seq": _eth(_gtp(_ue(5020, 4), seq=True)),
        "vxlan_gtp": _eth(_vxlan(_gtp(_ue()))),
        "vxlan_gtp_tcp": _eth(_vxlan(_gtp(_ue(5030, 1, "tcp")))),
        "vlan_vxlan_gtp": _eth(_vxlan(_gtp(_ue(5012, 6))), (("q", 100),)),
        "qinq_vxlan_gtp": _eth(_vxlan(_gtp(_ue(5012, 6))), (("ad", 10), ("q", 100))),
        "vxlan_gtp_ext1": _eth(_vxlan(_gtp(_ue(5006, 2), ext=1))),
        "vxlan_gtp_ext4": _eth(_vxlan(_gtp(_ue(5006, 2), ext=4))),
        "vxlan_gtp_ext5": _eth(_vxlan(_gtp(_ue(5006, 2), ext=5))),
        "gtp_ext2": _eth(_gtp(_ue(5026, 3), ext=2)),
        "vxlan_gtp_opts": _eth(_vxlan(_gtp(_ue(5014, 1, options=True), opts=True), opts=True)),
        "gtp_echo": _eth(_gtp(Raw(b"\x0e\x00"), gtp_type=1)),
        "vxlan_gtp_ipv6_ue": _eth(_vxlan(_gtp(IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(dport=5004)))),
        "vxlan_ipv6": _eth(
            IP(src="10.10.0.1", dst="10.10.0.2")
            / UDP(sport=1, dport=4789)
            / VXLAN(vni=VNI)
            / Ether()
            / IPv6(src="2001:db8::1", dst="2001:db8::2")
            / UDP(dport=5004)
        ),
        "ipv6": _eth(IPv6(src="2001:db8::1", dst="2001:db8::2") / UDP(dport=5004) / Raw(b"x" * 8)),
        "arp": _eth(ARP(psrc="10.0.0.1", pdst="10.0.0.2")),
        "vxlan_in_vxlan": _eth(_vxlan(_vxlan(_ue()))),
        # 272 bytes of headers: beyond the NetFPGA parser's 192-byte window (netfpga-window)
        "deep_qinq_opts_ext4": _eth(
            _vxlan(_gtp(_deep_ue(), ext=4, opts=True, max_opts=True), opts=True, max_opts=True),
            (("ad", 10), ("q", 100)),
        ),
    }
    return {name: bytes(p) for name, p in s.items()}


# ---- offsets of IPv4 headers (for the length-field lies) -----------------------------------


def ipv4_offsets(data: bytes) -> list[int]:
    """Where the IPv4 headers of a well-formed frame of our stacks start (scapy's view)."""
    p = Ether(data)
    out = []
    layer: Packet | None = p
    while layer is not None and not isinstance(layer, Raw):
        if isinstance(layer, IP):
            out.append(len(data) - len(bytes(layer)))
        layer = layer.payload if layer.payload else None
    return out


def _set16(data: bytes, off: int, value: int) -> bytes:
    b = bytearray(data)
    struct.pack_into("!H", b, off, value & 0xFFFF)
    return bytes(b)


def _set8(data: bytes, off: int, value: int) -> bytes:
    b = bytearray(data)
    b[off] = value & 0xFF
    return bytes(b)


# ---- families ----------------------------------------------------------------------------


def truncations(base: dict[str, bytes]) -> Iterator[Frame]:
    """Every prefix of every stack (1 … n-1 bytes) — truncation at every offset."""
    for name, data in base.items():
        for n in range(1, len(data)):
            yield Frame(f"cut/{name}/o={n}", data[:n])


def length_lies(base: dict[str, bytes]) -> Iterator[Frame]:
    """IPv4 total length and IHL made to disagree with the frame, at every IPv4 level."""
    for name in ("plain_udp", "vxlan_gtp", "vxlan_gtp_opts", "gtp_udp", "vlan_vxlan_gtp", "qinq_vxlan_gtp"):
        data = base[name]
        for level, off in enumerate(ipv4_offsets(data)):
            tot = struct.unpack_from("!H", data, off + 2)[0]
            ihl = data[off] & 0x0F
            for delta in (-tot, -tot + 1, -tot + 4 * ihl - 1, -tot + 4 * ihl, -1, 1, 2, 100, 0xFFFF - tot):
                yield Frame(f"totlen/{name}/ip{level}/{tot}{delta:+d}", _set16(data, off + 2, tot + delta))
            for new_ihl in range(16):
                if new_ihl != ihl:
                    yield Frame(f"ihl/{name}/ip{level}/ihl={new_ihl}", _set8(data, off, 0x40 | new_ihl))
            for version in (0, 6, 15):
                yield Frame(f"version/{name}/ip{level}/v={version}", _set8(data, off, (version << 4) | ihl))
            # fragments: first fragment (MF), a later fragment, a later fragment with MF
            for flags_off, what in ((0x2000, "first"), (0x0001, "later"), (0x2010, "later_mf")):
                yield Frame(f"frag/{name}/ip{level}/{what}", _set16(data, off + 6, flags_off))
            # padding after the packet (Ethernet minimum frame): fine everywhere
            yield Frame(f"pad/{name}/ip{level}", data + bytes(18))


def gtp_variants() -> Iterator[Frame]:
    """GTP-U flags, versions, message types and extension header chains, cut and whole."""
    for ext in range(0, 6):
        for seq in (False, True):
            for enc in ("gtp", "vxlan_gtp"):
                g = _gtp(_ue(5000 + 2 * ext, ext), ext=ext, seq=seq)
                data = bytes(_eth(g if enc == "gtp" else _vxlan(g)))
                yield Frame(f"gtpext/{enc}/ext={ext}/seq={int(seq)}", data)
    base = bytes(_eth(_vxlan(_gtp(_ue(), ext=2))))
    gtp_off = 14 + 20 + 8 + 8 + 14 + 20 + 8
    for flags in (0x30, 0x32, 0x34, 0x31, 0x10, 0x20, 0x50, 0xF4, 0x00, 0x38):
        yield Frame(f"gtpflags/0x{flags:02x}", _set8(base, gtp_off, flags))
    for mtype in (1, 2, 26, 254, 255, 0):
        yield Frame(f"gtptype/{mtype}", _set8(base, gtp_off + 1, mtype))
    first_ext = gtp_off + 12
    for elen in (0, 1, 2, 3, 40, 255):
        yield Frame(f"gtpextlen/first={elen}", _set8(base, first_ext, elen))
        yield Frame(f"gtpextlen/second={elen}", _set8(base, first_ext + 4, elen))
    for nxt in (0, 0x85, 0x40, 0xFF):
        yield Frame(f"gtpnext/opt={nxt:#x}", _set8(base, gtp_off + 11, nxt))
        yield Frame(f"gtpnext/last={nxt:#x}", _set8(base, first_ext + 7, nxt))


def l2_variants() -> Iterator[Frame]:
    """EtherTypes and tags, runts."""
    ue = bytes(_ue())
    for etype in (0x0800, 0x8100, 0x88A8, 0x9100, 0x86DD, 0x0806, 0x0000, 0xFFFF):
        yield Frame(f"etype/{etype:#06x}", bytes(6) + bytes.fromhex("020000000001") + struct.pack("!H", etype) + ue)
    for tags in ((0x8100,), (0x88A8,), (0x8100, 0x8100), (0x88A8, 0x8100), (0x8100, 0x88A8), (0x88A8, 0x88A8)):
        b = bytearray(bytes.fromhex("020000000002020000000001"))
        for i, t in enumerate(tags):
            b += struct.pack("!H", t) + struct.pack("!H", 100 + i)
        b += struct.pack("!H", 0x0800) + ue
        yield Frame(f"tags/{'+'.join(f'{t:#06x}' for t in tags)}", bytes(b))
    for n in range(1, 15):
        yield Frame(f"runt/{n}", bytes(range(n)))
    yield Frame("runt/60zeros", bytes(60))


def mutations(base: dict[str, bytes], count: int, seed: int = SEED) -> Iterator[Frame]:
    """Seeded random byte mutations of the header region of random stacks (1-3 bytes set,
    sometimes cut too): what a fuzzer would try, reproducible by name."""
    rng = random.Random(seed)
    names = sorted(base)
    for i in range(count):
        name = rng.choice(names)
        data = bytearray(base[name])
        hdr = min(len(data), 130)
        edits = []
        for _ in range(rng.randint(1, 3)):
            off = rng.randrange(hdr)
            val = rng.choice([0, 0xFF, rng.randrange(256), data[off] ^ (1 << rng.randrange(8))])
            data[off] = val
            edits.append(f"{off}={val:02x}")
        cut = len(data) if rng.random() < 0.7 else rng.randrange(1, len(data))
        yield Frame(f"mut/{i}/{name}/{','.join(edits)}/len={cut}", bytes(data[:cut]))


def scenario_frames() -> Iterator[Frame]:
    """The seed scenarios' flows: seed 000 Table 3 (4 slices, every flow), seed 001 Table 1
    at each of its frame sizes, seed 004's three destination slices (plain IPv4, ECT(0))."""
    for sf in traffic_scenarios.table3(4):
        size = 128 + (sf.flow_id % 7) * 97  # a spread of sizes; Table 3 itself uses 1500
        pad = max(0, size - traffic_scenarios.header_len(sf.flow))
        yield Frame(f"seed000/t3/{sf.flow_id}", build_bytes(sf.flow, bytes(pad)))
    for size in traffic_scenarios.TABLE1_LOADS:
        for sf in traffic_scenarios.table1(size):
            pad = max(0, sf.frame_size - traffic_scenarios.header_len(sf.flow))
            yield Frame(f"seed001/t1/{size}/{sf.flow_id}", build_bytes(sf.flow, bytes(pad)))
    for sid in (1, 2, 3):
        for k in range(16):
            pkt = _eth(
                IP(src=f"10.0.{k % 4}.{32 + k}", dst=f"192.168.{sid}.1", tos=(k % 8) << 2 | 0b10)
                / UDP(sport=40000 + k, dport=6000 + sid)
                / Raw(bytes(64 + 100 * k))
            )
            yield Frame(f"seed004/slice{sid}/{k}", bytes(pkt))


def generate(mutation_count: int = 1500) -> list[Frame]:
    """The corpus (deterministic); built once per process: scapy takes ~13 s for it."""
    return list(_generate(mutation_count))


@functools.cache
def _generate(mutation_count: int) -> tuple[Frame, ...]:
    base = stacks()
    families: list[Callable[[], Iterator[Frame]]] = [
        lambda: (Frame(f"whole/{n}", d) for n, d in base.items()),
        lambda: truncations(base),
        lambda: length_lies(base),
        gtp_variants,
        l2_variants,
        lambda: mutations(base, mutation_count),
        scenario_frames,
    ]
    out: list[Frame] = []
    seen: set[str] = set()
    for family in families:
        for f in family():
            if f.name not in seen:  # names identify frames in reports
                seen.add(f.name)
                out.append(f)
    return tuple(out)


if __name__ == "__main__":
    from scapy.utils import wrpcap

    frames = generate()
    wrpcap(sys.argv[1] if len(sys.argv) > 1 else "corpus.pcap", [Ether(f.data) for f in frames])
    print(f"{len(frames)} frames")
