"""Run frames through each data plane and return one normalised verdict per frame.

Each plane is driven by its own driver with the same IR: XDP in the kernel through
BPF_PROG_TEST_RUN, the NetFPGA RTL as the Verilator model ``sp_sim`` (one pcap in, one
capture out, one process), the P4 program in the bundled target's pipeline in-process
(pushed to over P4Runtime by the p4rt driver, packets fed straight to the pipeline).
The verdict fields are those of docs/packets.md §3.
"""

from __future__ import annotations

import csv
import sys
from collections.abc import Iterator, Sequence
from concurrent import futures
from contextlib import contextmanager
from dataclasses import dataclass, replace
from pathlib import Path

import grpc
from p4.v1 import p4runtime_pb2_grpc
from scapy.utils import RawPcapReader, RawPcapWriter

from sliceportal.rules.ir import RuleIR
from sliceportal_netfpga import simulator
from sliceportal_netfpga.driver import Driver as NetfpgaDriver
from sliceportal_netfpga.simulator import SimProcess
from sliceportal_p4rt.driver import Driver as P4rtDriver
from sliceportal_testbed.processes import free_port
from sliceportal_xdp import layout
from sliceportal_xdp.driver import Driver as XdpDriver
from sliceportal_xdp.libbpf import XDP_DROP

BMV2 = Path(__file__).resolve().parents[1] / "bmv2"
if str(BMV2) not in sys.path:  # the bundled target is a folder, not an installed package
    sys.path.insert(0, str(BMV2))

from bmv2_target.packet import Parsed  # noqa: E402
from bmv2_target.packet import parse as p4_parse  # noqa: E402
from bmv2_target.server import Faults, P4RuntimeServicer  # noqa: E402
from bmv2_target.switch import Switch, SwitchConfig  # noqa: E402

CLASSIFIED, UNPARSED, MALFORMED = "classified", "unparsed", "malformed"


@dataclass(frozen=True, slots=True)
class Verdict:
    outcome: str  # classified | unparsed | malformed
    slice_id: int
    lane: int
    rr_path: int | None  # None: the plane has no RR paths (p4-no-paths)
    forwarded: bool
    rewritten: bool  # the frame left with other bytes than it came with
    depth_ok: bool = True  # NetFPGA only: every header the spec needs ends in its window

    def __str__(self) -> str:
        path = "-" if self.rr_path is None else str(self.rr_path)
        return (
            f"{self.outcome:<10} slice={self.slice_id} lane={self.lane} path={path} "
            f"{'fwd' if self.forwarded else 'DROP'}{' REWRITTEN' if self.rewritten else ''}"
        )


# ---- XDP ---------------------------------------------------------------------------------


@contextmanager
def xdp_plane(ir: RuleIR, lanes: int) -> Iterator[XdpDriver]:
    # no lane CPUs and no alt node: every frame is XDP_PASSed unchanged, so what we see is
    # the parser and the classifier alone (steering is docs/xdp.md's business)
    d = XdpDriver({"record_last": True, "flow_cache": False, "overload_poll_s": 0, "lanes": lanes, "paths": ir.paths})
    try:
        d.apply(d.lower(ir), lambda _: None)
        yield d
    finally:
        d.close()


XDP_MIN_FRAME = 14  # BPF_PROG_TEST_RUN refuses shorter frames; no NIC delivers them (xdp-runt)


def run_xdp(d: XdpDriver, frames: Sequence[bytes]) -> list[Verdict | None]:
    """None for a frame the kernel does not hand to an XDP program at all."""
    out: list[Verdict | None] = []
    g = d.dataplane.global_counts()  # per frame: the full counters scan the flow cache
    for data in frames:
        if len(data) < XDP_MIN_FRAME:
            out.append(None)
            continue
        r = d.run(data)
        last = d.last_decision()
        g2 = d.dataplane.global_counts()
        mal = g2[layout.G_MALFORMED] - g[layout.G_MALFORMED]
        unp = g2[layout.G_UNPARSED] - g[layout.G_UNPARSED]
        g = g2
        outcome = MALFORMED if mal else UNPARSED if unp else CLASSIFIED
        assert mal + unp <= 1 and (outcome == CLASSIFIED) == last.parsed, (mal, unp, last)
        out.append(
            Verdict(
                outcome,
                last.slice_id if last.parsed else 0,
                last.lane if last.parsed else 0,
                last.rr_path if last.parsed else 0,
                r.retval != XDP_DROP,
                r.data != data,
            )
        )
    return out


# ---- NetFPGA -----------------------------------------------------------------------------

NETFPGA_WINDOW = 192  # sp_parser HDR_BYTES (netfpga-window)


@dataclass(frozen=True, slots=True)
class NetfpgaPlane:
    sim: SimProcess
    workdir: Path


@contextmanager
def netfpga_plane(ir: RuleIR, workdir: Path) -> Iterator[NetfpgaPlane]:
    sim = simulator.start(workdir / "sp_sim.sock")
    d = NetfpgaDriver({"address": str(workdir / "sp_sim.sock")})
    try:
        d.apply(d.lower(ir), lambda _: None)
        yield NetfpgaPlane(sim, workdir)
    finally:
        d.close()
        sim.stop()


def run_netfpga(plane: NetfpgaPlane, frames: Sequence[bytes]) -> list[Verdict]:
    sim, workdir = plane.sim, plane.workdir
    pin, pout = workdir / "in.pcap", workdir / "out.pcap"
    with RawPcapWriter(str(pin), linktype=1) as w:
        for data in frames:
            w.write(data)
    sim.command(f"CAPTURE {pout}")
    # idle cycles between frames: no queue ever fills, so nothing is dropped or reordered
    sim.command(f"INJECT {pin} 400")
    sim.command("RUN", timeout=600)
    with open(f"{pout}.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with RawPcapReader(str(pout)) as reader:
        outs = [bytes(f) for f, _ in reader]
    if len(rows) != len(frames) or len(outs) != len(frames):
        raise AssertionError(f"sp_sim returned {len(rows)} rows / {len(outs)} frames for {len(frames)} in")
    order = sorted(range(len(rows)), key=lambda i: int(rows[i]["in_cycle"]))
    verdicts = []
    for data, i in zip(frames, order, strict=True):
        row = rows[i]
        bad, default = row["malformed"] == "1", row["default"] == "1"
        outcome = MALFORMED if bad else UNPARSED if default else CLASSIFIED
        verdicts.append(
            Verdict(outcome, int(row["slice_id"]), int(row["lane"]), int(row["rr_path"]), True, outs[i] != data)
        )
    return verdicts


# ---- P4 (bundled target, in-process) -------------------------------------------------------

P4_IN, P4_OUT, P4_TENANT_VID = 1, 2, 100


@contextmanager
def p4_plane(ir: RuleIR, lanes: int) -> Iterator[Switch]:
    switch = Switch(SwitchConfig(8, 64, None))
    server = grpc.server(futures.ThreadPoolExecutor(max_workers=4))
    p4runtime_pb2_grpc.add_P4RuntimeServicer_to_server(P4RuntimeServicer(switch, 1, Faults()), server)
    port = free_port()
    server.add_insecure_port(f"127.0.0.1:{port}")
    server.start()
    # seed 002: frames enter on an access port of the tenant (every frame has a tenant)
    # and leave on the trunk uplink, where the tenant's VID is written (p4-tenant-tag)
    d = P4rtDriver(
        {
            "address": f"127.0.0.1:{port}",
            "lanes": lanes,
            "access_ports": {P4_IN: P4_TENANT_VID},
            "trunk_ports": [P4_OUT],
            "uplink_port": P4_OUT,
        }
    )
    try:
        d.apply(d.lower(ir), lambda _: None)
        yield switch
    finally:
        d.close()
        server.stop(grace=0)


def _undo_p4_egress(data: bytes, out: bytes, p: Parsed) -> bytes:
    """The frame as it would be without the two documented P4 egress edits: the tenant
    tag (p4-tenant-tag) and recomputed IPv4 checksums (p4-checksums)."""
    b = bytearray(out)
    if p.vlan < 0 and len(b) == len(data) + 4 and b[12:14] == b"\x81\x00":
        del b[12:16]  # pushed a tag
    elif p.vlan >= 0 and len(b) == len(data):
        b[14:16] = data[14:16]  # rewrote the VID of the first tag
    for off in (p.ipv4, p.inner_ipv4, p.ue_ipv4):
        if off >= 0 and len(b) == len(data):
            b[off + 10 : off + 12] = data[off + 10 : off + 12]
    return bytes(b)


def run_p4(switch: Switch, frames: Sequence[bytes]) -> list[Verdict]:
    pipe = switch.pipeline  # the compiled engine running p4c's JSON
    assert pipe is not None, "no pipeline: the driver did not push the program"
    malformed = pipe.counter_index("SlicingIngress.classifier.malformed")
    slice_rx = pipe.counter_index("SlicingIngress.classifier.slice_rx")
    out = []
    for i, data in enumerate(frames):
        before = pipe.counter_cells(malformed)[0][0]
        rx_before = pipe.counter_cells(slice_rx)
        f = pipe.ingress(data, P4_IN, i)
        bad = pipe.counter_cells(malformed)[0][0] - before
        if f is None:
            out.append(Verdict(MALFORMED if bad else UNPARSED, 0, 0, None, False, False))
            continue
        # the slice is the slice_rx cell the packet counted in (what the data plane measured)
        rx = pipe.counter_cells(slice_rx)
        slice_id = next((s for s, (a, b) in enumerate(zip(rx_before, rx, strict=True)) if a != b), 0)
        extracted = pipe.extracted(f)
        sent = pipe.egress(f, i) or b""
        parsed = p4_parse(data)  # the reference parser: header offsets for the undo below
        # p4-checksums: the deparser recomputes every option-less IPv4 header the parser
        # extracted, also one whose total length then failed verification (BMv2 does too)
        ips = [extracted.get(h, -1) for h in ("ipv4", "inner_ipv4", "ue_ipv4")]
        parsed = replace(parsed, ipv4=ips[0], inner_ipv4=ips[1], ue_ipv4=ips[2])
        # p4-no-unparsed-counter: the parser's own mark tells unparsed from a miss
        outcome = MALFORMED if bad else UNPARSED if parsed.unparsed else CLASSIFIED
        out.append(
            Verdict(
                outcome,
                slice_id,
                f.priority,
                None,
                True,
                _undo_p4_egress(data, sent, parsed) != data,
            )
        )
    return out
