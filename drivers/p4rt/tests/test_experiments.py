"""Seed 004 (vQueue per slice: rate, burst limit, ECN) and seed 002 (tenant VLAN isolation)
through the whole chain: driver -> P4Runtime -> bundled target -> pcaps."""

from __future__ import annotations

import random
from collections import Counter as Histogram
from collections.abc import Callable
from pathlib import Path
from typing import Any

import grpc
import pytest
from irs import TENANT_A, TENANT_B, ip, two_tenants
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc
from traffic import cbr, frame, read_pcap, run_pcaps, write_pcap

from sliceportal.rules.ir import Action, Match, MissPolicy, Qos, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.traffic.packets import Encap, Flow
from sliceportal_p4rt.driver import Driver

# Seed 004 Table II (BMv2 column): rate, burst limit, ECN target.
SLICES = {"DC": (48e6, 20.0, 5.0), "Enterprise": (12e6, 10.0, None), "Peering": (240e6, 30.0, None)}
OVERLOAD = 1.25  # each slice offers 25 % above its limit
DURATION_S, WARMUP_S = 1.0, 0.2


def read_register(address: str, driver: Driver, name: str, index: int) -> int:
    ch = grpc.insecure_channel(address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    req = p4runtime_pb2.ReadRequest(device_id=1)
    r = req.entities.add().register_entry
    r.register_id = driver.p4info.register(name).preamble.id
    r.index.index = index
    got = [e.register_entry for resp in stub.Read(req) for e in resp.entities]
    ch.close()
    return int.from_bytes(got[0].data.bitstring, "big")


def seed004(
    address: str, tmp_path: Path, qos: Callable[[float, float, float | None], Qos], **options: Any
) -> tuple[Driver, Histogram[int], Histogram[int]]:
    """Seed 004's three slices (a slice is the flows to one destination), each with
    ``qos(rate, burst, ecn target)``, pushed by a driver of ``options``; each offered 25 % above
    its rate (DC's frames ECN-capable) for DURATION_S through the target: the driver, the bytes
    each slice sent after the warm-up, and its ECN-marked frames."""
    tenant = TenantEntry(1, "operator", 1001, 100)
    slices, rules, flows = [], [], {}
    for sid, (name, (rate, burst, ecn)) in enumerate(SLICES.items(), start=1):
        slices.append(SliceEntry(sid, sid, name, 1001, 100, (7 - sid,), qos(rate, burst, ecn)))
        dst = f"192.168.{sid}.1"
        rules.append(Rule(Match(dst_ip=Ternary.exact(ip(dst), 32)), Action(sid, 7 - sid, 0), name))
        flows[sid] = Flow("10.1.0.1", dst, 5001, vni=1001, teid=7, vlan=100, encap=Encap.VXLAN_GTP)
    ir = RuleIR(lanes=8, paths=1, rules=tuple(rules), slices=tuple(slices), tenants=(tenant,))
    d = Driver({"address": address, "trunk_ports": [1, 2], "uplink_port": 2, **options})
    d.apply(d.lower(ir), lambda e: None)

    packets, ip_offset = [], {}
    for sid, (name, (rate, _, _)) in enumerate(SLICES.items(), start=1):
        data, ip_offset[sid] = frame(flows[sid], 1400, ect=name == "DC")
        packets += cbr(data, rate * OVERLOAD, 1.0 + sid * 1e-4, DURATION_S)
    write_pcap(tmp_path / "in.pcap", packets)
    run_pcaps(address, {1: tmp_path / "in.pcap"}, tmp_path / "out")
    out = read_pcap(tmp_path / "out" / "port2.pcap")

    by_dst = {ip(f"192.168.{sid}.1").to_bytes(4, "big"): sid for sid in flows}
    tx_bytes: Histogram[int] = Histogram()
    marks: Histogram[int] = Histogram()
    start, end = int((1.0 + WARMUP_S) * 1e9), int((1.0 + DURATION_S) * 1e9)
    for t, data in out:
        sid = by_dst[data[ip_offset[1] + 16 : ip_offset[1] + 20]]
        if data[ip_offset[sid] + 1] & 0b11 == 0b11:
            marks[sid] += 1
        if start <= t < end:
            tx_bytes[sid] += len(data)
    return d, tx_bytes, marks


def test_seed004_vqueue_rate_burst_and_ecn(target, tmp_path: Path) -> None:
    d, tx_bytes, marks = seed004(
        target.address, tmp_path, lambda rate, burst, ecn: Qos(rate_bps=int(rate), burst_ms=burst, ecn_ms=ecn)
    )
    counters = d.counters()
    for sid, (name, (rate, burst, _)) in enumerate(SLICES.items(), start=1):
        measured = tx_bytes[sid] * 8 / (DURATION_S - WARMUP_S)
        assert measured == pytest.approx(rate, rel=0.05), name
        max_delay_ns = read_register(target.address, d, "SlicingIngress.vqueue.slice_delay_max", sid)
        assert 0 < max_delay_ns <= burst * 1e6, name
        assert counters.slices[sid].drops["vqueue_burst"] > 0, name
    assert marks[1] > 0 and counters.slices[1].ecn_marks == marks[1]
    assert marks[2] == marks[3] == 0  # not ECN-capable, and no ECN target
    d.close()


def test_seed002_tenant_vlan_isolation(target, tmp_path: Path) -> None:
    """Ports 1 / 2 exclusive to tenants A (VID 100) / B (VID 200), port 3 the shared trunk."""
    ir = two_tenants()
    d = Driver({"address": target.address, "access_ports": {1: 100, 2: 200}, "trunk_ports": [3], "uplink_port": 3})
    d.apply(d.lower(ir), lambda e: None)
    mk = {
        vid: frame(Flow("10.1.0.1", "10.2.0.1", 5000, vni=1001, vlan=vid, encap=Encap.VXLAN), 200)[0]
        for vid in (100, 200, 300)
    }
    untagged = frame(Flow("10.1.0.1", "10.2.0.1", 5000, vni=1001, encap=Encap.VXLAN), 200)[0]
    trunk = [(10**9 + i * 1000, mk[(100, 200, 300)[i % 3]]) for i in range(30)]
    trunk.append((10**9 + 50_000, untagged))  # untagged on a trunk: no tenant
    write_pcap(tmp_path / "p3.pcap", trunk)
    write_pcap(tmp_path / "p1.pcap", [(10**9 + 500, untagged)])
    run_pcaps(target.address, {3: tmp_path / "p3.pcap", 1: tmp_path / "p1.pcap"}, tmp_path / "out")
    p1 = read_pcap(tmp_path / "out" / "port1.pcap")
    p2 = read_pcap(tmp_path / "out" / "port2.pcap")
    p3 = read_pcap(tmp_path / "out" / "port3.pcap")

    # VID 100 reaches only tenant A's port, untagged; VID 200 only tenant B's.
    def popped(vid: int) -> bytes:
        return mk[vid][:12] + mk[vid][16:]

    assert len(p1) == 10 and all(data == popped(100) for _, data in p1)
    assert len(p2) == 10 and all(data == popped(200) for _, data in p2)
    # Tenant A's access port goes out on the trunk tagged with A's VID.
    assert [data for _, data in p3] == [untagged[:12] + b"\x81\x00\x00\x64" + untagged[12:]]
    ch = grpc.insecure_channel(target.address)
    stub = p4runtime_pb2_grpc.P4RuntimeStub(ch)
    req = p4runtime_pb2.ReadRequest(device_id=1)
    req.entities.add().counter_entry.counter_id = d.p4info.counter_id("SlicingIngress.tenant.tenant_drops")
    drops = {e.counter_entry.index.index: e.counter_entry.data.packet_count for r in stub.Read(req) for e in r.entities}
    ch.close()
    assert drops == {0: 0, 1: 11}  # 10 unknown VID 300 + 1 untagged on the trunk
    assert TENANT_A.vlan == 100 and TENANT_B.vlan == 200
    d.close()


def test_classification_matches_the_ir_reference(target, tmp_path: Path) -> None:
    """Random flows of both tenants: per-rule hits, misses and lanes equal RuleIR.classify's."""
    ir = two_tenants()
    ir = RuleIR(lanes=8, paths=1, rules=ir.rules, slices=ir.slices, tenants=ir.tenants, miss=MissPolicy())
    d = Driver({"address": target.address, "trunk_ports": [1, 2], "uplink_port": 2})
    d.apply(d.lower(ir), lambda e: None)
    rng = random.Random(4)
    expect_rules: Histogram[int] = Histogram()
    expect_lanes: Histogram[int] = Histogram()
    packets = []
    for i in range(300):
        vni, vlan = rng.choice([(1001, 100), (1002, 200)])
        flow = Flow(
            f"10.{rng.choice([1, 3])}.{rng.randrange(256)}.{rng.randrange(1, 255)}",
            "10.2.0.1",
            rng.choice([5000, 5002, 80]),
            dscp=rng.randrange(64),
            vni=vni,
            teid=rng.choice([0x100, 0x1F0, 0x200]),
            vlan=vlan,
            encap=rng.choice([Encap.VXLAN, Encap.VXLAN_GTP]),
        )
        decision = ir.classify(flow.key())
        if decision.rule_index is not None:
            expect_rules[decision.rule_index] += 1
        expect_lanes[decision.lane] += 1
        packets.append((10**9 + i * 10_000, frame(flow, 128)[0]))
    write_pcap(tmp_path / "in.pcap", packets)
    run_pcaps(target.address, {1: tmp_path / "in.pcap"}, tmp_path / "out")
    c = d.counters()
    assert {i: r.packets for i, r in c.rules.items() if r.packets} == dict(expect_rules)
    assert c.misses.packets == 300 - sum(expect_rules.values())
    assert {int(k.split("/")[1]): v.packets for k, v in c.lanes.items() if v.packets} == dict(expect_lanes)
    d.close()


def test_priority_beyond_the_switch_queues_is_dropped(start_target, tmp_path: Path) -> None:
    """BMv2 without --priority-queues drops packets whose priority is > 0."""
    t = start_target()  # one queue per port, as simple_switch_grpc's default
    s = SliceEntry(1, 1, "s", 1001, 100, (5,))
    ir = RuleIR(
        lanes=8,
        paths=1,
        rules=(Rule(Match(dst_port=Ternary.exact(5000, 16)), Action(1, 5, 0)),),
        slices=(s,),
        tenants=(TenantEntry(1, "t", 1001, 100),),
        miss=MissPolicy(),
    )
    d = Driver({"address": t.address, "trunk_ports": [1, 2], "uplink_port": 2})
    d.apply(d.lower(ir), lambda e: None)
    hi = frame(Flow("10.1.0.1", "10.2.0.1", 5000, vni=1001, vlan=100, encap=Encap.VXLAN), 128)[0]
    lo = frame(Flow("10.1.0.1", "10.2.0.1", 6000, vni=1001, vlan=100, encap=Encap.VXLAN), 128)[0]
    write_pcap(tmp_path / "in.pcap", [(10**9, hi), (10**9 + 1000, lo)])
    run_pcaps(t.address, {1: tmp_path / "in.pcap"}, tmp_path / "out")
    assert [data for _, data in read_pcap(tmp_path / "out" / "port2.pcap")] == [lo]
    d.close()


def test_seed004_meter_mode_for_comparison(target, tmp_path: Path) -> None:
    """The same three slices policed by trTCM meters instead of virtual queues (seed 004
    compares the two): the long-run rate still holds the limit, but a meter neither
    queues nor marks — the excess is dropped red, and no packet is ECN-marked."""
    d, tx_bytes, marks = seed004(
        target.address,
        tmp_path,
        lambda rate, burst, ecn: Qos(rate_bps=int(rate), guaranteed_bps=int(rate / 2), burst_ms=burst, ecn_ms=ecn),
        qos_mode="meter",
    )
    counters = d.counters()
    for sid, (name, (rate, _, _)) in enumerate(SLICES.items(), start=1):
        measured = tx_bytes[sid] * 8 / (DURATION_S - WARMUP_S)
        assert measured == pytest.approx(rate, rel=0.05), name
        assert sum(counters.slices[sid].drops.values()) > 0, name
    assert sum(marks.values()) == 0 and all(c.ecn_marks == 0 for c in counters.slices.values())
    d.close()
