"""Pcap helpers for the experiments: CBR streams on the packets' own clock, and reads."""

from __future__ import annotations

import json
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path

import grpc
from scapy.layers.inet import IP
from scapy.utils import PcapWriter, RawPcapReader

from sliceportal.traffic.packets import Flow, build
from sliceportal_testbed.veths import veth_pairs


@contextmanager
def veth_ports(tag: str, ports: Iterable[int]) -> Iterator[dict[int, tuple[str, str]]]:
    """One veth pair per switch port, up, IPv6 off, deleted afterwards (root): the switch
    owns ``<tag><p>s``, the test sends into / captures from ``<tag><p>t``."""
    ends = {p: (f"{tag}{p}s", f"{tag}{p}t") for p in ports}
    with veth_pairs(*ends.values()):
        yield ends


def frame(flow: Flow, size: int, ect: bool = False) -> tuple[bytes, int]:
    """A frame of about ``size`` bytes and the offset of its innermost IPv4 header."""
    pkt = build(flow, bytes(max(0, size - len(build(flow)))))
    inner = pkt
    while inner.payload and IP in inner.payload:
        inner = inner.payload
    ip = inner[IP] if not isinstance(inner, IP) else inner
    while IP in ip.payload:
        ip = ip.payload[IP]
    if ect:
        ip.tos |= 0b10
    data = bytes(pkt)
    return data, len(data) - len(bytes(ip))


def cbr(data: bytes, rate_bps: float, start_s: float, duration_s: float) -> Iterable[tuple[int, bytes]]:
    gap_ns = len(data) * 8 * 1e9 / rate_bps
    n = int(duration_s * 1e9 / gap_ns)
    t0 = int(start_s * 1e9)
    return ((t0 + int(i * gap_ns), data) for i in range(n))


def write_pcap(path: Path, packets: Iterable[tuple[int, bytes]]) -> None:
    w = PcapWriter(str(path), linktype=1, sync=False)
    w.write_header(None)
    for t_ns, data in sorted(packets, key=lambda p: p[0]):
        sec, ns = divmod(t_ns, 1_000_000_000)
        w.write_packet(data, sec=sec, usec=ns // 1000)
    w.close()


def read_pcap(path: Path) -> list[tuple[int, bytes]]:
    if not path.exists():
        return []
    with RawPcapReader(str(path)) as r:
        scale = 1 if getattr(r, "nano", False) else 1000  # the target writes nanosecond pcaps
        return [(m.sec * 1_000_000_000 + m.usec * scale, d) for d, m in r]


def run_pcaps(address: str, inputs: dict[int, Path], out_dir: Path) -> dict[str, object]:
    ch = grpc.insecure_channel(address)
    call = ch.unary_unary("/sliceportal.bmv2.Dataplane/RunPcaps")
    req = json.dumps({"inputs": {str(p): str(f) for p, f in inputs.items()}, "out_dir": str(out_dir)})
    resp = json.loads(call(req.encode(), timeout=120))
    ch.close()
    return dict(resp)
