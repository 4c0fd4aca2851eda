"""Fast parser and per-packet stamping, checked against scapy (the reference dissector)."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scapy.contrib.gtp import GTP_U_Header, GTPPDUSessionContainer
from scapy.layers.inet import IP, TCP, UDP
from scapy.layers.l2 import Ether

from sliceportal.traffic import packets
from sliceportal.traffic.packets import Encap, Flow
from sliceportal.traffic.scenarios import ScenarioFlow
from sliceportal.traffic.templates import make_template, make_templates
from sliceportal.traffic.wire import innermost_udp, locate

SHAPES = [(e, v, p) for e in Encap for v in (None, 42) for p in ("udp", "tcp")]


def _flow(encap: Encap, vlan: int | None, proto: str) -> Flow:
    return Flow(
        "10.45.3.7",
        "10.46.0.1",
        5010,
        dscp=5,
        proto=proto,
        vni=1003,
        teid=(3 << 16) | 7,
        vlan=vlan,
        encap=encap,
    )


@pytest.mark.parametrize(("encap", "vlan", "proto"), SHAPES)
def test_locate_finds_the_payload_header_in_every_shape(encap: Encap, vlan: int | None, proto: str) -> None:
    frame = packets.build_bytes(_flow(encap, vlan, proto), packets.payload(77, 12345, 987654321, 64))
    assert locate(frame) == (77, 12345, 987654321)
    header_end = len(frame) - 64 + packets.PAYLOAD_HEADER.size
    for cut in range(header_end):  # any frame cut before the header ends is not ours
        assert locate(frame[:cut]) is None


def test_locate_follows_gtp_extension_headers() -> None:
    inner = IP(src="10.45.0.1", dst="10.46.0.1") / UDP(dport=5000) / packets.payload(5, 6, 7, 30)
    gtp = GTP_U_Header(teid=9, gtp_type=255, E=1, next_ex=0x85) / GTPPDUSessionContainer(QFI=5) / inner
    frame = bytes(Ether() / IP() / UDP(sport=2152, dport=2152) / gtp)
    assert locate(frame) == (5, 6, 7)


def test_locate_rejects_what_is_not_ours() -> None:
    assert locate(b"") is None
    assert locate(bytes(Ether() / IP() / TCP() / b"hello")) is None
    assert locate(bytes(Ether(type=0x86DD) / bytes(60))) is None
    frag = Ether() / IP(flags="MF", frag=0) / UDP(dport=5000) / packets.payload(1, 2, 3, 30)
    assert locate(bytes(frag)) is None
    not_gpdu = Ether() / IP() / UDP(dport=2152) / GTP_U_Header(gtp_type=1) / bytes(40)
    assert locate(bytes(not_gpdu)) is None
    wrong_magic = Ether() / IP() / UDP(dport=5000) / (b"\x00\x01" + bytes(30))
    assert locate(bytes(wrong_magic)) is None


@pytest.mark.parametrize(("encap", "vlan"), [(e, v) for e in Encap for v in (None, 42)])
def test_innermost_udp_finds_the_probe_payload_inside_the_tunnels(encap: Encap, vlan: int | None) -> None:
    flow = _flow(encap, vlan, "udp")
    data = bytes(range(44))
    frame = packets.build_bytes(flow, data)
    assert innermost_udp(frame) == (flow.src_port, flow.dst_port, len(frame) - len(data))
    assert innermost_udp(packets.build_bytes(_flow(encap, vlan, "tcp"), data)) is None
    # cut inside the innermost UDP header: not a datagram we can read
    assert innermost_udp(frame[: len(frame) - len(data) - 1]) is None


@settings(max_examples=300, deadline=None)
@given(st.binary(max_size=300))
def test_locate_never_raises_on_garbage(data: bytes) -> None:
    full = packets.build_bytes(_flow(Encap.VXLAN_GTP, None, "udp"), packets.payload(1, 2, 3, 40))
    for parse in (locate, innermost_udp):
        parse(data)
        parse(full[: len(data)] + data)  # valid prefixes with garbage after them


@settings(max_examples=60, deadline=None)
@given(
    shape=st.sampled_from(SHAPES),
    seq=st.integers(0, 2**64 - 1),
    send_ns=st.integers(0, 2**64 - 1),
    size=st.integers(0, 400),
)
def test_stamped_frames_are_what_scapy_builds(
    shape: tuple[Encap, int | None, str], seq: int, send_ns: int, size: int
) -> None:
    flow = _flow(*shape)
    floor = len(packets.build_bytes(flow, bytes(packets.PAYLOAD_HEADER.size)))
    sf = ScenarioFlow(flow_id=42, flow=flow, slice_index=3, user=7, service=5, priority=2, frame_size=floor + size)
    tpl = make_template(sf)
    frame = tpl.frame_at(seq, send_ns)
    # scapy builds the same packet from scratch, computing every checksum itself
    expected = packets.build_bytes(flow, packets.payload(42, seq, send_ns, size + packets.PAYLOAD_HEADER.size))
    assert frame == expected
    assert len(frame) == sf.frame_size
    assert locate(frame) == (42, seq, send_ns)


def test_stamped_checksums_verify_in_scapy() -> None:
    flow = _flow(Encap.VXLAN_GTP, None, "tcp")
    tpl = make_template(ScenarioFlow(1, flow, 0, 1, 0, 0, frame_size=200))
    pkt = Ether(tpl.frame_at(2**40 + 3, 1_700_000_000_123_456_789))
    l4 = pkt.getlayer(TCP)
    stored = l4.chksum
    del l4.chksum
    assert Ether(bytes(pkt)).getlayer(TCP).chksum == stored


_ip = st.tuples(*[st.integers(0, 255)] * 4).map(lambda t: ".".join(map(str, t)))


@st.composite
def _random_flows(draw: st.DrawFn) -> list[ScenarioFlow]:
    """Flows of mixed shapes and sizes with random field values, as one scenario."""
    out = []
    for i in range(draw(st.integers(1, 12))):
        encap, vlan, proto = draw(st.sampled_from(SHAPES))
        flow = Flow(
            draw(_ip),
            draw(_ip),
            draw(st.integers(0, 65535)),
            dscp=draw(st.integers(0, 63)),
            src_port=draw(st.integers(0, 65535)),
            proto=proto,
            vni=draw(st.integers(0, 2**24 - 1)),
            teid=draw(st.integers(0, 2**32 - 1)),
            vlan=None if vlan is None else draw(st.integers(0, 4095)),
            encap=encap,
        )
        floor = len(packets.build_bytes(flow, bytes(packets.PAYLOAD_HEADER.size)))
        size = floor + draw(st.sampled_from([0, 1, 2, 3, 100, 1001]))
        out.append(ScenarioFlow(draw(st.integers(0, 2**32 - 1)), flow, 0, i, 0, 0, frame_size=size))
    return out


@settings(max_examples=40, deadline=None)
@given(_random_flows())
def test_patched_templates_are_byte_identical_to_scapy(flows: list[ScenarioFlow]) -> None:
    fast = make_templates(flows)
    for sf, tpl in zip(flows, fast, strict=True):
        assert tpl.frame == make_template(sf).frame, sf
        assert tpl.frame_at(5, 77) == make_template(sf).frame_at(5, 77)
