"""BPF_PROG_TEST_RUN of the parser: every header combination, every truncation offset,
malformed headers. The parsed key must equal what ``Flow.key()`` says a correct parser
extracts; anything cut or inconsistent is counted as malformed and passed."""

from __future__ import annotations

import itertools

import pytest
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.inet import IP, UDP, IPOption_RR
from scapy.layers.inet6 import IPv6
from scapy.layers.l2 import ARP, Dot1AD, Dot1Q, Ether
from scapy.packet import Raw

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build, build_bytes
from sliceportal_xdp import layout
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.libbpf import XDP_PASS, BpfError

from .conftest import noop

pytestmark = pytest.mark.needs_root

FLOW = Flow("10.1.2.3", "10.200.0.9", 5004, dscp=46, vni=0x123456, teid=0xDEADBEEF)


@pytest.fixture(scope="module", autouse=True)
def _one_rule(driver: Driver) -> None:
    # one rule so that parsed packets are classified (a hit or a miss) and counted
    ir = RuleIR(lanes=4, paths=8, rules=(Rule(Match(dst_port=Ternary.exact(5004, 16)), Action(1, 2, 3)),))
    driver.apply(driver.lower(ir), noop)


def malformed(driver: Driver) -> int:
    return driver.raw_counters().globals[layout.G_MALFORMED]


def with_gtp_ext(pkt: object, n: int) -> object:
    """Insert ``n`` PDU session container extension headers after the GTP-U header."""
    p = pkt.copy()  # type: ignore[attr-defined]
    g = p[GTP_U_Header]
    inner = g.payload.copy()
    g.remove_payload()
    g.E = 1
    g.next_ex = 0x85
    chain = None
    for i in range(n):
        ext = GTPPDUSessionContainer(type=0, QFI=5 + i, NextExtHdr=0x85 if i < n - 1 else 0)
        chain = ext if chain is None else chain / ext
    g.add_payload(chain / inner)
    return p


COMBOS = list(itertools.product(list(Encap), [None, 100], ["udp", "tcp"]))


@pytest.mark.parametrize(("encap", "vlan", "proto"), COMBOS)
def test_every_encapsulation_parses_to_the_flow_key(driver: Driver, encap: Encap, vlan: int | None, proto: str) -> None:
    flow = Flow(
        FLOW.src_ip,
        FLOW.dst_ip,
        FLOW.dst_port,
        dscp=FLOW.dscp,
        proto=proto,
        vni=FLOW.vni,
        teid=FLOW.teid,
        vlan=vlan,
        encap=encap,
    )
    r = driver.run(build_bytes(flow, b"payload"))
    d = driver.last_decision()
    k = flow.key()
    assert d.parsed
    assert (d.src_ip, d.dst_ip, d.dst_port, d.dscp, d.vni, d.teid, d.vlan) == (
        k.src_ip,
        k.dst_ip,
        k.dst_port,
        k.dscp,
        k.vni,
        k.teid,
        k.vlan,
    )
    assert (d.rule, d.lane, d.rr_path) == (0, 2, 3)
    assert r.retval != 0  # never XDP_ABORTED


@pytest.mark.parametrize("n_ext", [1, 2, 4])
@pytest.mark.parametrize("encap", [Encap.GTP, Encap.VXLAN_GTP])
def test_gtp_extension_headers_are_skipped(driver: Driver, n_ext: int, encap: Encap) -> None:
    flow = Flow(FLOW.src_ip, FLOW.dst_ip, 5004, teid=77, vni=5, encap=encap)
    pkt = bytes(with_gtp_ext(build(flow, b"x" * 20), n_ext))  # type: ignore[call-overload]
    driver.run(pkt)
    d = driver.last_decision()
    assert d.parsed and d.teid == 77 and d.dst_port == 5004 and d.src_ip == flow.key().src_ip


def test_too_many_gtp_extension_headers_are_malformed(driver: Driver) -> None:
    flow = Flow(FLOW.src_ip, FLOW.dst_ip, 5004, teid=77, encap=Encap.GTP)
    before = malformed(driver)
    r = driver.run(bytes(with_gtp_ext(build(flow), layout_max_ext() + 1)))  # type: ignore[call-overload]
    assert r.retval == XDP_PASS and not driver.last_decision().parsed
    assert malformed(driver) == before + 1


def layout_max_ext() -> int:
    return 4  # SP_GTP_MAX_EXT in sliceportal.h


@pytest.mark.parametrize("encap", list(Encap))
def test_ipv4_options_on_every_ip_header(driver: Driver, encap: Encap) -> None:
    flow = Flow(FLOW.src_ip, FLOW.dst_ip, 5004, dscp=10, teid=9, vni=9, encap=encap)
    pkt = build(flow, b"abc")
    for layer in pkt.iterpayloads():
        if isinstance(layer, IP):
            layer.options = [IPOption_RR(routers=["1.2.3.4"])]
    driver.run(bytes(pkt))
    d = driver.last_decision()
    k = flow.key()
    assert d.parsed and (d.src_ip, d.dst_port, d.dscp, d.teid, d.vni) == (
        k.src_ip,
        k.dst_port,
        k.dscp,
        k.teid,
        k.vni,
    )


def full_packet() -> bytes:
    flow = Flow(FLOW.src_ip, FLOW.dst_ip, 5004, proto="tcp", teid=3, vni=4, vlan=7, encap=Encap.VXLAN_GTP)
    return bytes(with_gtp_ext(build(flow, b"0123456789"), 2))  # type: ignore[call-overload]


def test_every_truncation_offset_is_malformed_and_passed(driver: Driver) -> None:
    pkt = full_packet()
    driver.run(pkt)
    assert driver.last_decision().parsed  # the whole packet is fine
    for n in range(len(pkt)):
        before = malformed(driver)
        try:
            r = driver.run(pkt[:n])
        except BpfError:
            # the kernel refuses test buffers shorter than an Ethernet header
            assert n < 14
            continue
        assert r.retval == XDP_PASS, n
        assert not driver.last_decision().parsed, n
        assert malformed(driver) == before + 1, n


def _mutate(pkt: bytes, offset: int, value: int) -> bytes:
    b = bytearray(pkt)
    b[offset] = value
    return bytes(b)


def test_malformed_headers_take_the_default_path(driver: Driver) -> None:
    full = build(Flow(FLOW.src_ip, FLOW.dst_ip, 5004, teid=3, vni=4, encap=Encap.VXLAN_GTP), b"x")
    raw = bytes(full)
    eth, ip, udp = 14, 20, 8
    vxlan_off = eth + ip + udp
    gtp_off = vxlan_off + 8 + eth + ip + udp
    cases = {
        "outer IHL below 5": _mutate(raw, eth, 0x44),
        "outer total length beyond the frame": _mutate(raw, eth + 2, 0xFF),
        "outer IPv4 version 6 behind EtherType IPv4": _mutate(raw, eth, 0x65),
        "GTP version 2": _mutate(raw, gtp_off, 0x50),
        "GTP extension header of length 0": bytes(
            with_gtp_ext(full, 1)  # type: ignore[call-overload]
        )[: gtp_off + 12]
        + b"\x00"
        + bytes(with_gtp_ext(full, 1))[gtp_off + 13 :],  # type: ignore[call-overload]
    }
    for what, pkt in cases.items():
        before = malformed(driver)
        r = driver.run(pkt)
        assert r.retval == XDP_PASS, what
        assert not driver.last_decision().parsed, what
        assert malformed(driver) == before + 1, what


def test_non_user_plane_traffic_is_passed_unclassified(driver: Driver) -> None:
    unparsed = driver.raw_counters().globals[layout.G_UNPARSED]
    mal = malformed(driver)
    pkts = [
        Ether() / ARP(),
        Ether() / IPv6() / UDP(dport=5004),
        Ether() / IP() / UDP(sport=2152, dport=2152) / GTP_U_Header(teid=5) / IPv6() / UDP(dport=5004),
        Ether() / Dot1AD(vlan=1) / Dot1Q(vlan=2) / Dot1Q(vlan=3) / IP() / UDP(dport=5004),  # a third tag
    ]
    for p in pkts:
        r = driver.run(bytes(p))
        assert r.retval == XDP_PASS and not driver.last_decision().parsed
    assert driver.raw_counters().globals[layout.G_UNPARSED] == unparsed + len(pkts)
    assert malformed(driver) == mal


def test_gtp_signalling_and_unchecked_flags_classify_on_the_carrier(driver: Driver) -> None:
    """docs/packets.md: GTP-U without a user packet (echo) is keyed on the IPv4 / UDP 2152
    that carries it; the VXLAN I flag and the GTP PT bit are not checked."""
    full = build(Flow(FLOW.src_ip, FLOW.dst_ip, 5004, teid=3, vni=4, encap=Encap.VXLAN_GTP), b"x")
    raw = bytes(full)
    vxlan_off = 14 + 20 + 8
    gtp_off = vxlan_off + 8 + 14 + 20 + 8
    echo = Ether() / IP(src="10.9.9.1", dst="10.9.9.2") / UDP(sport=2152, dport=2152) / GTP_U_Header(gtp_type=1, teid=7)
    driver.run(bytes(echo))
    d = driver.last_decision()
    assert d.parsed and (d.src_ip, d.dst_port, d.teid) == (0x0A090901, 2152, 7)
    for what, pkt in {"no I flag": _mutate(raw, vxlan_off, 0x00), "PT 0": _mutate(raw, gtp_off, 0x20)}.items():
        driver.run(pkt)
        d = driver.last_decision()
        assert d.parsed and (d.dst_port, d.vni, d.teid) == (5004, 4, 3), what


def test_fragments_and_other_protocols_classify_without_a_port(driver: Driver) -> None:
    later_fragment = Ether() / IP(src=FLOW.src_ip, dst=FLOW.dst_ip, frag=10, proto=17) / Raw(b"x" * 16)
    icmp = Ether() / IP(src=FLOW.src_ip, dst=FLOW.dst_ip, proto=1) / Raw(b"\x08\x00" + b"\x00" * 6)
    for p in (later_fragment, icmp):
        driver.run(bytes(p))
        d = driver.last_decision()
        assert d.parsed and d.dst_port == 0 and d.rule == layout.MISS_INDEX
