"""ECN marking, XDP against the P4 program (seed 004 M_DELAY; docs/packets.md §5 "ECN").

The planes that mark (XDP in the kernel, the P4 program in the bundled target's
pipeline; NetFPGA has no ECN: ``capabilities().ecn`` is false there) get the seed 000
Table 3 rule set with virtual queues on its slices: slices 1 and 3 mark above a 0 ms
target (every frame the queue admits is above it), slice 2 has a target its queue never
reaches, slice 4 no queue at all. The queues are deep and fast (10 Gbit/s, 1 s), so no
frame is dropped and each frame's outcome does not depend on either plane's clock.

Per frame, the bytes that leave must be the same on both planes, checksums included:
the XDP program fixes the IPv4 header checksum incrementally, the P4 deparser
recomputes it (``p4-checksums``), so for a frame that came in with right checksums the
two agree byte for byte. The frames: every seed 000 flow in each of the four ECN
codepoints, with and without IPv4 options on the UE header, plus the conformance corpus's
whole stacks and random mutations (equal up to the documented P4 egress
edits).
"""

from __future__ import annotations

import dataclasses
import sys
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from scapy.layers.inet import IP, IPOption_NOP
from scapy.layers.l2 import Ether
from scapy.packet import Packet

HERE = Path(__file__).resolve().parent
for extra in (HERE, HERE.parent / "bmv2"):  # --import-mode=importlib: our helpers by path
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

import corpus  # noqa: E402
import planes  # noqa: E402
from bmv2_target.packet import parse as p4_parse  # noqa: E402
from bmv2_target.switch import Switch  # noqa: E402

from sliceportal.rules.compiler import compile_rules  # noqa: E402
from sliceportal.rules.ir import Qos, RuleIR  # noqa: E402
from sliceportal.rules.scenarios import NETFPGA_TARGET, table3_config  # noqa: E402
from sliceportal_xdp.driver import Driver as XdpDriver  # noqa: E402

pytestmark = pytest.mark.needs_root

LANES = NETFPGA_TARGET.lanes
FAST = 10_000_000_000  # bit/s: no queue builds over a test run, nothing is dropped
QOS_BY_SLICE = {
    1: Qos(rate_bps=FAST, burst_ms=1000, ecn_ms=0),  # marks every ECN-capable frame
    2: Qos(rate_bps=FAST, burst_ms=1000, ecn_ms=500),  # a target the queue never reaches
    3: Qos(rate_bps=FAST, burst_ms=1000, ecn_ms=0),
    4: Qos(),  # no virtual queue
}
ECN_MARKING = {1, 3}
CORPUS_FAMILIES = ("whole/", "mut/")
FLOWS = 64  # seed 000 flows taken (of 256: 16 services x 4 slices x 4 users; all slices)


def ecn_rule_set(paths: int) -> RuleIR:
    tenants, slices = table3_config(4)
    tenants = tuple(dataclasses.replace(t, vlan=planes.P4_TENANT_VID) for t in tenants)
    slices = tuple(dataclasses.replace(s, qos=QOS_BY_SLICE[s.ref]) for s in slices)
    return compile_rules(tenants, slices, dataclasses.replace(NETFPGA_TARGET, paths=paths)).ir


def _ips(pkt: Packet) -> list[IP]:
    out, layer = [], pkt.getlayer(IP)
    while layer is not None:
        out.append(layer)
        layer = layer.payload.getlayer(IP)
    return out


def ecn_frames() -> list[corpus.Frame]:
    """Every seed 000 Table 3 flow in each ECN codepoint (the UE header; the outer ones
    ECT(0), which must stay), and with IPv4 options on the UE header (never marked)."""
    out = []
    seed000 = [f for f in corpus.scenario_frames() if f.name.startswith("seed000/")]
    for f in seed000[:: max(1, len(seed000) // FLOWS)]:
        for ecn in range(4):
            for options in (False, True):
                pkt = Ether(f.data)
                ips = _ips(pkt)
                for ip in ips[:-1]:
                    ip.tos = (ip.tos & 0xFC) | 2
                ips[-1].tos = (ips[-1].tos & 0xFC) | ecn
                if options:
                    ips[-1].options = [IPOption_NOP()] * 4
                for ip in ips:
                    ip.len = ip.chksum = ip.ihl = None
                    if ip.payload.name == "UDP":
                        ip.payload.len = ip.payload.chksum = None
                name = f"ecn/{ecn}/{'opt' if options else 'plain'}/{f.name}"
                out.append(corpus.Frame(name, bytes(Ether(bytes(pkt)))))
    return out


def checksums_right(data: bytes) -> bool:
    for ip in _ips(Ether(data)):
        again = IP(bytes(ip))
        again.chksum = None
        if IP(bytes(again)).chksum != ip.chksum:
            return False
    return True


def untag(data: bytes, out: bytes) -> bytes:
    """The P4 frame without the tenant tag the trunk port writes (p4-tenant-tag)."""
    b = bytearray(out)
    vlan = p4_parse(data).vlan
    if vlan < 0 and len(b) == len(data) + 4 and b[12:14] == b"\x81\x00":
        del b[12:16]
    elif vlan >= 0 and len(b) == len(data):
        b[14:16] = data[14:16]
    return bytes(b)


def without_checksums(data: bytes, out: bytes, offsets: tuple[int, ...]) -> bytes:
    """``out`` with the IPv4 header checksums of ``data`` put back at the headers the P4
    parser extracted (p4-checksums: the deparser recomputes them)."""
    b = bytearray(out)
    for off in offsets:
        if off >= 0 and len(b) == len(data):
            b[off + 10 : off + 12] = data[off + 10 : off + 12]
    return bytes(b)


@dataclasses.dataclass(frozen=True)
class Outputs:
    xdp: list[bytes | None]  # None: dropped, or a runt XDP never sees
    p4: list[bytes | None]
    p4_ipv4: list[tuple[int, ...]]  # offsets of the IPv4 headers the P4 parser extracted
    xdp_marks: dict[int, int]  # slice -> ECN marks counted
    p4_marks: dict[int, int]


def run_both(ir: RuleIR, ir_one_path: RuleIR, frames: list[bytes]) -> Outputs:
    xdp: list[bytes | None] = []
    with planes.xdp_plane(ir, LANES) as d:
        assert isinstance(d, XdpDriver)
        for data in frames:
            if len(data) < planes.XDP_MIN_FRAME:
                xdp.append(None)
                continue
            r = d.run(data)
            xdp.append(r.data if r.retval != planes.XDP_DROP else None)
        xdp_marks = {s: c.ecn for s, c in d.raw_counters().slices.items() if c.ecn}
    p4: list[bytes | None] = []
    p4_ipv4: list[tuple[int, ...]] = []
    with planes.p4_plane(ir_one_path, LANES) as switch:
        assert isinstance(switch, Switch)
        pipe = switch.pipeline
        assert pipe is not None
        for i, data in enumerate(frames):
            f = pipe.ingress(data, planes.P4_IN, i)
            ext = pipe.extracted(f) if f is not None else {}
            p4_ipv4.append(tuple(ext.get(h, -1) for h in ("ipv4", "inner_ipv4", "ue_ipv4")))
            sent = pipe.egress(f, i) if f is not None else None
            p4.append(untag(data, sent) if sent else None)
        cells = pipe.counter_cells(pipe.counter_index("SlicingIngress.vqueue.slice_ecn_marks"))
        p4_marks = {s: c[0] for s, c in enumerate(cells) if c[0]}
    return Outputs(xdp, p4, p4_ipv4, xdp_marks, p4_marks)


@pytest.fixture(scope="module")
def marked_frames() -> list[corpus.Frame]:
    return ecn_frames()


@pytest.fixture(scope="module")
def outputs(marked_frames: list[corpus.Frame]) -> Iterator[tuple[list[corpus.Frame], Outputs]]:
    # and corpus frames that may reach a slice's queue with any ECN bits: the stacks and
    # the random mutations (the rest is parser business: test_crossplane)
    frames = marked_frames + [f for f in corpus.generate() if f.name.startswith(CORPUS_FAMILIES)]
    yield frames, run_both(ecn_rule_set(NETFPGA_TARGET.paths), ecn_rule_set(1), [f.data for f in frames])


def test_the_rule_set_gives_every_kind_of_slice() -> None:
    ir = ecn_rule_set(1)
    by_id = {s.ref: s.qos for s in ir.slices}
    assert by_id == QOS_BY_SLICE


def test_both_planes_mark_the_same_frames_byte_for_byte(outputs: tuple[list[corpus.Frame], Outputs]) -> None:
    frames, out = outputs
    bad, kinds = [], Counter()
    for f, x, p, ext in zip(frames, out.xdp, out.p4, out.p4_ipv4, strict=True):
        if len(f.data) < planes.XDP_MIN_FRAME:
            continue  # xdp-runt
        if f.name.startswith("ecn/"):
            same = x is not None and x == p  # forwarded by both, checksums included
        elif x is None or p is None:
            continue  # where a frame goes is test_crossplane's business
        else:
            same = without_checksums(f.data, x, ext) == without_checksums(f.data, p, ext)  # p4-checksums
        if x is not None and x != f.data:
            kinds["marked" if f.name.startswith("ecn/") else "changed"] += 1
        if not same:
            show = [b.hex() if b else "dropped" for b in (f.data, x, p)]
            bad.append(f"{f.name}\n    in   {show[0]}\n    xdp  {show[1]}\n    p4   {show[2]}")
    print(f"{len(frames)} frames; XDP changed {dict(kinds)}; {len(bad)} differ")
    assert not bad, f"{len(bad)} frames differ:\n" + "\n".join(bad[:20])


def test_marks_follow_the_codepoint_the_header_and_the_slice(
    marked_frames: list[corpus.Frame], outputs: tuple[list[corpus.Frame], Outputs]
) -> None:
    _, out = outputs
    marked_by_slice: Counter[int] = Counter()
    for f, x in zip(marked_frames, out.xdp[: len(marked_frames)], strict=True):
        _, ecn, form, *_ = f.name.split("/")
        assert x is not None and checksums_right(x), f.name
        ips_in, ips_out = _ips(Ether(f.data)), _ips(Ether(x))
        assert [ip.tos for ip in ips_out[:-1]] == [ip.tos for ip in ips_in[:-1]], f.name  # outer headers alone
        changed = ips_out[-1].tos != ips_in[-1].tos
        if changed:
            assert ips_out[-1].tos == ips_in[-1].tos | 3
        # which slice: the UE address's /27 (seed 000 Table 3: 32 users per slice)
        slice_ref = (int(ips_in[-1].src.split(".")[2]) if ips_in[-1].src.startswith("10.0.") else -1) + 1
        want = slice_ref in ECN_MARKING and int(ecn) != 0 and form == "plain"
        assert changed == (want and int(ecn) != 3), (f.name, slice_ref)
        marked_by_slice[slice_ref] += want
    # the counters count CE frames too (as the P4 program's slice_ecn_marks does)
    assert set(out.xdp_marks) == set(out.p4_marks)
    assert sum(out.xdp_marks.values()) == sum(out.p4_marks.values()) >= sum(marked_by_slice.values()) > 0
    assert len(out.xdp_marks) == len(ECN_MARKING)
