"""Hitless pushes (issue #14 item 4) on the bundled target and on ``simple_switch_grpc``:
stable priorities (a push writes the diff, a one-rule change O(1) entries) and
make-before-break order (after every single write each packet gets the verdict of the old or
of the new rule set, never a third one).

The switches classify real frames: a probe goes in on an access port, its frame is awaited on
the uplink, and the slice / lane it was given is read from the program's own counters
(``slice_rx`` per slice, 0 = miss; ``lane_tx`` per lane). Both switches run on veth pairs.
"""

from __future__ import annotations

import dataclasses
import ipaddress
import os
import random
import socket
import sys
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import grpc
import pytest
from bmv2_target.packet_io import open_port, receive
from bmv2_target.testing import Target
from p4.v1 import p4runtime_pb2, p4runtime_pb2_grpc

from sliceportal.drivers.contract import ProgressEvent
from sliceportal.drivers.push import diff_tables, target_spec
from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, SliceEntry, TenantEntry, Ternary
from sliceportal.rules.spec import ServiceSpec, SliceSpec, SubscriberSpec, TenantSpec
from sliceportal.traffic.packets import Flow
from sliceportal_p4rt.driver import Driver
from sliceportal_p4rt.p4info import CLASSIFIER, EGR, ING
from sliceportal_p4rt.simple_switch import start_simple_switch_grpc

from .traffic import frame, veth_ports

CONFORMANCE = Path(__file__).resolve().parents[3] / "dataplane" / "conformance"
if str(CONFORMANCE) not in sys.path:  # --import-mode=importlib: the shared helper by path
    sys.path.insert(0, str(CONFORMANCE))

import hitless  # noqa: E402

pytestmark = [pytest.mark.needs_root]
OPTIONS: dict[str, Any] = {"access_ports": {1: 100}, "trunk_ports": [2], "uplink_port": 2}
TENANT = hitless.TENANT
Verdict = hitless.Verdict  # here (slice id, lane); slice 0 = a miss


# ---- the two switches on veth pairs ----------------------------------------------------------


@dataclass
class Wired:
    address: str
    tx: socket.socket  # into access port 1
    rx: socket.socket  # out of uplink port 2


@pytest.fixture
def veths() -> Iterator[dict[int, tuple[str, str]]]:
    with veth_ports(f"hl{os.getpid() % 10000}{random.randrange(100)}-", (1, 2)) as ends:
        yield ends


SWITCHES = ["bundled", pytest.param("simple_switch_grpc", marks=pytest.mark.needs_bmv2)]


@contextmanager
def switch_on(kind: str, ends: dict[int, tuple[str, str]], start_target: Callable[..., Target]) -> Iterator[str]:
    """The bundled target or ``simple_switch_grpc``, 8 priority queues, on the switch's end of
    each veth pair in ``ends``; its address."""
    ports = {p: s for p, (s, _) in ends.items()}
    if kind == "bundled":
        args = ["--priority-queues", "8"]
        for p, dev in ports.items():
            args += ["-i", f"{p}@{dev}"]
        yield start_target(*args).address  # stopped by start_target
    else:
        with start_simple_switch_grpc(ports, priority_queues=8) as switch:
            yield switch.address


def sender(dev: str) -> socket.socket:
    """A raw socket that sends frames into ``dev``."""
    tx = socket.socket(socket.AF_PACKET, socket.SOCK_RAW)
    tx.bind((dev, 0))
    return tx


@pytest.fixture(params=SWITCHES)
def wired(
    request: pytest.FixtureRequest, veths: dict[int, tuple[str, str]], start_target: Callable[..., Target]
) -> Iterator[Wired]:
    with switch_on(request.param, veths, start_target) as address:
        tx = sender(veths[1][1])
        rx = open_port(veths[2][1])
        rx.settimeout(5)
        try:
            yield Wired(address, tx, rx)
        finally:
            tx.close()
            rx.close()


class CounterReader:
    """Reads a set of the program's counter cells over P4Runtime and tells which grew."""

    def __init__(self, address: str, cells: list[tuple[int, int]]) -> None:
        self.channel = grpc.insecure_channel(address)
        self.stub = p4runtime_pb2_grpc.P4RuntimeStub(self.channel)
        self.req = p4runtime_pb2.ReadRequest(device_id=1)
        for counter_id, index in cells:
            e = self.req.entities.add().counter_entry
            e.counter_id, e.index.index = counter_id, index
        self.last = self._read()

    def _read(self) -> dict[tuple[int, int], int]:
        return {
            (e.counter_entry.counter_id, e.counter_entry.index.index): e.counter_entry.data.packet_count
            for r in self.stub.Read(self.req)
            for e in r.entities
        }

    def close(self) -> None:
        self.channel.close()


class Prober(CounterReader):
    """Classifies one frame at a time on the switch and returns the verdict it got."""

    def __init__(self, wired: Wired, drv: Driver, slices: int) -> None:
        self.wired = wired
        self.slice_rx = drv.p4info.counter_id(f"{ING}.classifier.slice_rx")
        lane_tx = drv.p4info.counter_id(f"{EGR}.vlan_tag.lane_tx")
        super().__init__(
            wired.address, [(self.slice_rx, i) for i in range(slices + 1)] + [(lane_tx, i) for i in range(8)]
        )

    def verdict(self, data: bytes) -> tuple[int, int]:
        self.wired.tx.send(data)
        while receive(self.wired.rx) is None:  # None: a frame we sent ourselves on that end
            pass
        now = self._read()
        grew = [k for k, v in now.items() if v != self.last[k]]
        self.last = now
        slices = [i for cid, i in grew if cid == self.slice_rx]
        lanes = [i for cid, i in grew if cid != self.slice_rx]
        assert len(slices) == 1 and len(lanes) == 1, f"one probe, counted in {grew}"
        return slices[0], lanes[0]


# ---- random updates over every slice type (dataplane/conformance/hitless.py) ----------------


def test_random_updates_classify_every_probe_old_or_new_after_every_write(wired: Wired) -> None:
    rng = random.Random(14)
    ir = hitless.first_ir(rng, lanes=8, paths=1, rules=10, miss=MissPolicy(mode=MissMode.ALGORITHM1))
    slices = list(ir.slices)
    drv = Driver({"address": wired.address, "batch_size": 1, "timeout_s": 10, **OPTIONS})
    rules = list(ir.rules)
    plan = drv.lower(ir)
    drv.apply(plan, lambda e: None)
    prober = Prober(wired, drv, len(slices))
    flows = hitless.probe_flows(rng)
    frames = [frame(f, 128)[0] for f in flows]
    tally = hitless.Tally()
    try:
        for n in range(100):
            rules = hitless.mutate(rng, rules, slices)
            new_ir = hitless.rule_ir(ir, rules)
            new_plan = drv.lower(new_ir)
            up = hitless.update(rng, ir, new_ir, flows)
            check = Check(prober, [frames[i] for i in up.watch], up.allowed, tally, f"update {n}")
            result = drv.apply(new_plan, check)
            # (a) the push wrote exactly the diff of the two plans, one update per write here
            diff = sum(diff_tables(plan.tables, new_plan.tables).counts().values())
            assert check.writes == result.added + result.removed + result.modified == diff
            assert [prober.verdict(frames[i]) for i in up.watch] == up.expected
            ir, plan = new_ir, new_plan
        assert drv.read_state().tables == plan.tables
    finally:
        prober.close()
        drv.close()
    assert tally.checked > 2000
    assert tally.neither == 0, str(tally)


class Probes(Protocol):
    def verdict(self, data: bytes) -> Verdict: ...


class Check:
    """The progress callback: after every write, each watched probe's verdict is one allowed
    (through the access port and trunk prober as through the plain one)."""

    def __init__(
        self, prober: Probes, frames: list[bytes], allowed: list[set[Verdict]], tally: hitless.Tally, where: str
    ) -> None:
        self.prober, self.frames, self.allowed, self.tally, self.where = prober, frames, allowed, tally, where
        self.writes = 0

    def __call__(self, e: ProgressEvent) -> None:
        if e.phase != "write":
            return
        self.writes += 1
        got = [self.prober.verdict(f) for f in self.frames]
        self.tally.check(got, self.allowed, f"{self.where}, after write {self.writes}")


# ---- one rule at 10 k subscribers ----------------------------------------------------------


def subscribers_ir(drv: Driver, users: int, first_service_ports: tuple[int, int]) -> RuleIR:
    tenant = TenantSpec(1, "t", 1001, 100)
    # 250 UEs per /24 as bench/time_to_slice.py imports them: ~100 classifier entries after
    # prefix aggregation, not one
    subs = tuple(
        SubscriberSpec(u, f"001{u:012d}", int(ipaddress.IPv4Address(f"10.40.{u // 250}.{u % 250 + 1}")), teids=(u + 1,))
        for u in range(users)
    )
    services = tuple(
        ServiceSpec(f"q{i}", lane, dst_ports=((5000 + 8 * i, 5007 + 8 * i),)) for i, lane in enumerate([0, 2, 4, 6])
    )
    services = (ServiceSpec("q0", 0, dst_ports=(first_service_ports,)), *services[1:])
    spec = SliceSpec(1, "embb", 1, (0, 2, 4, 6), services=services, subscribers=subs)
    return compile_rules([tenant], [spec], target_spec(drv.capabilities())).ir


def one_rule_changed(base: RuleIR, how: str) -> RuleIR:
    rules = list(base.rules)
    extra = Rule(
        Match(src_ip=Ternary.exact(int(ipaddress.IPv4Address("10.40.3.3")), 32), dst_port=Ternary.exact(7000, 16)),
        Action(1, 6, 0),
    )
    if how == "added at the top":  # as a per-flow intent for one UE is (above the slice's rules)
        rules.insert(0, extra)
    elif how == "added in the middle":
        rules.insert(len(rules) // 2, extra)
    elif how == "removed":
        rules.pop(len(rules) // 3)
    else:  # another lane for one rule
        r = rules[len(rules) // 2]
        rules[len(rules) // 2] = Rule(r.match, Action(r.action.slice_id, (r.action.lane + 2) % 8, 0))
    return RuleIR(
        lanes=base.lanes, paths=1, rules=tuple(rules), slices=base.slices, tenants=base.tenants, miss=base.miss
    )


@pytest.mark.parametrize("how", ["added at the top", "added in the middle", "removed", "action changed"])
def test_one_rule_change_at_10k_subscribers_writes_one_entry(wired: Wired, how: str) -> None:
    drv = Driver({"address": wired.address, "timeout_s": 30, **OPTIONS})
    base = subscribers_ir(drv, 10_000, (5000, 5007))
    before = drv.lower(base)
    drv.apply(before, lambda e: None)
    after = drv.lower(one_rule_changed(base, how))
    result = drv.apply(after, lambda e: None)
    writes = result.added + result.removed + result.modified
    assert len(before.tables[CLASSIFIER]) > 50
    assert writes == sum(diff_tables(before.tables, after.tables).counts().values())
    assert writes == 1
    assert drv.read_state().tables == after.tables
    drv.close()


def test_a_service_change_at_10k_subscribers_writes_its_rules_only(wired: Wired) -> None:
    """A service's port range is one rule per subscriber block in the IR: the push replaces
    those (delete + insert each: P4Runtime cannot modify a match) and nothing else."""
    drv = Driver({"address": wired.address, "timeout_s": 30, **OPTIONS})
    base = subscribers_ir(drv, 10_000, (5000, 5007))
    before = drv.lower(base)
    drv.apply(before, lambda e: None)
    moved = subscribers_ir(drv, 10_000, (6000, 6007))
    changed = len(set(moved.rules) - set(base.rules))
    after = drv.lower(moved)
    result = drv.apply(after, lambda e: None)
    assert 0 < changed < len(base.rules) // 2
    assert (result.added, result.removed, result.modified) == (changed, changed, 0)
    drv.close()


def test_a_fresh_driver_keeps_the_priorities_the_switch_holds(wired: Wired) -> None:
    """Priorities come from the switch, not from the process: a new driver (a restarted
    portal) lowering the next version on a connected session changes only the diff."""
    rng = random.Random(7)
    slices = [SliceEntry(1, 11, "s1", TENANT.vni, TENANT.vlan, (0, 2, 4, 6))]
    rules = [hitless.random_rule(rng, slices) for _ in range(30)]
    ir = RuleIR(lanes=8, paths=1, rules=tuple(rules), slices=tuple(slices), tenants=(TENANT,))
    first = Driver({"address": wired.address, **OPTIONS})
    first.apply(first.lower(ir), lambda e: None)
    first.close()
    second = Driver({"address": wired.address, "election_id": 2, **OPTIONS})
    second.health()  # connected, as a deploy is after its health probe
    rules.insert(0, Rule(Match(dst_port=Ternary.exact(7000, 16)), Action(1, 6, 0)))
    plan = second.lower(RuleIR(lanes=8, paths=1, rules=tuple(rules), slices=tuple(slices), tenants=(TENANT,)))
    result = second.apply(plan, lambda e: None)
    assert (result.added, result.removed, result.modified) == (1, 0, 0)
    second.close()


# ---- tenant port / VLAN bindings (seed 002 table slicing) ------------------------------------

TENANT_POOL = (
    TenantEntry(1, "A", 1001, 100),
    TenantEntry(2, "B", 1002, 200),
    TenantEntry(3, "C", 1003, 300),
    TenantEntry(4, "D", 1004, 400),
)
MOVED_VLAN = {3: 350}  # tenant C's VLAN ID moves between 300 and 350
TRUNK_OPTIONS: dict[str, Any] = {"access_ports": {1: 100}, "trunk_ports": [2, 3], "uplink_port": 2}
DROPPED: Verdict = (-1, -1)  # an unknown VLAN ID on a trunk: dropped, no tenant
NOT_SENT = -2  # lane of a probe that was classified but never left the switch


def tenant_slices(t: TenantEntry) -> list[SliceEntry]:
    """Two slices per tenant, of the slice types 2 ref - 1 and 2 ref of the catalogue; ids stable."""
    types = hitless.catalogue_lanes()
    return [
        SliceEntry(
            2 * t.ref - 1 + k,
            100 + 2 * t.ref + k,
            f"{t.name}{k}",
            t.vni,
            t.vlan,
            types[(2 * t.ref - 2 + k) % len(types)],
        )
        for k in range(2)
    ]


def tenant_rule(rng: random.Random, t: TenantEntry) -> Rule:
    """A random rule of the tenant's slices, scoped to its VNI as the compiler scopes rules."""
    r = hitless.random_rule(rng, tenant_slices(t))
    return Rule(dataclasses.replace(r.match, vni=Ternary.exact(t.vni, 24)), r.action)


def tenants_ir(present: dict[int, TenantEntry], rules: dict[int, list[Rule]]) -> RuleIR:
    ts = [present[ref] for ref in sorted(present)]
    return RuleIR(
        lanes=8,
        paths=1,
        rules=tuple(r for t in ts for r in rules[t.ref]),
        slices=tuple(s for t in ts for s in tenant_slices(t)),
        tenants=tuple(ts),
        miss=MissPolicy(mode=MissMode.ALGORITHM1),
    )


def tenant_verdict(ir: RuleIR, flow: Flow) -> Verdict:
    """Seed 002 on a trunk: the VLAN ID names the tenant (none: dropped); then the IR's rules."""
    if all(t.vlan != flow.vlan for t in ir.tenants):
        return DROPPED
    return hitless.verdict(ir, flow)


class TrunkProber(CounterReader):
    """Sends probes into one port (tagged into trunk 3, untagged into access port 1); the
    verdict from the counters: slice_rx and lane_tx (classified and sent) or tenant_drops
    (no tenant for the VLAN ID)."""

    def __init__(self, address: str, tx: socket.socket, drv: Driver) -> None:
        self.tx = tx
        self.ids = {
            k: drv.p4info.counter_id(n)
            for k, n in (
                ("slice", f"{ING}.classifier.slice_rx"),
                ("lane", f"{EGR}.vlan_tag.lane_tx"),
                ("drop", f"{ING}.tenant.tenant_drops"),
            )
        }
        cells = (("slice", 2 * len(TENANT_POOL) + 1), ("lane", 8), ("drop", 2))
        super().__init__(address, [(self.ids[kind], i) for kind, n in cells for i in range(n)])

    def verdict(self, data: bytes, via: socket.socket | None = None) -> Verdict:
        (via or self.tx).send(data)
        deadline = time.monotonic() + 2
        while True:
            now = self._read()
            grew = {k for k, v in now.items() if v != self.last[k]}
            slices = [i for cid, i in grew if cid == self.ids["slice"]]
            lanes = [i for cid, i in grew if cid == self.ids["lane"]]
            drops = [i for cid, i in grew if cid == self.ids["drop"]]
            if drops or (slices and lanes) or time.monotonic() > deadline:
                break
        self.last = now
        if drops:
            assert not slices and not lanes, f"one probe, counted in {grew}"
            return DROPPED
        assert len(slices) == 1 and len(lanes) <= 1, f"one probe, counted in {grew}"
        return slices[0], lanes[0] if lanes else NOT_SENT  # classified, never left (no forwarding entry)


@pytest.fixture(params=SWITCHES)
def trunked(
    request: pytest.FixtureRequest, start_target: Callable[..., Target]
) -> Iterator[tuple[str, socket.socket, socket.socket]]:
    """A switch with access port 1, trunk 2 (the uplink) and trunk 3; senders into 3 and 1."""
    with (
        veth_ports(f"ht{os.getpid() % 10000}{random.randrange(100)}-", (1, 2, 3)) as ends,
        switch_on(request.param, ends, start_target) as address,
    ):
        tx, tx1 = sender(ends[3][1]), sender(ends[1][1])
        try:
            yield address, tx, tx1
        finally:
            tx.close()
            tx1.close()


def test_tenant_binding_updates_classify_every_probe_old_or_new_after_every_write(
    trunked: tuple[str, socket.socket, socket.socket],
) -> None:
    """Tenants come and go and a tenant's VLAN ID moves while their rules change: every
    probe on the trunk gets the old or the new verdict (slice and lane, or dropped for a VLAN
    ID no tenant has) after every single write, and a push writes the diff."""
    address, tx, _ = trunked
    rng = random.Random(2002)
    present = {1: TENANT_POOL[0], 2: TENANT_POOL[1], 3: TENANT_POOL[2], 4: TENANT_POOL[3]}
    rules = {t.ref: [tenant_rule(rng, t) for _ in range(4)] for t in TENANT_POOL}
    drv = Driver({"address": address, "batch_size": 1, "timeout_s": 10, **TRUNK_OPTIONS})
    ir = tenants_ir(present, rules)
    plan = drv.lower(ir)
    drv.apply(plan, lambda e: None)
    prober = TrunkProber(address, tx, drv)
    flows = [
        f
        for t in TENANT_POOL
        for vlan in (t.vlan, MOVED_VLAN.get(t.ref, t.vlan))
        for f in hitless.probe_flows(rng, 8, t, vlan)
    ]
    frames = [frame(f, 128)[0] for f in flows]
    tally = hitless.Tally()
    tenant_changes = 0
    try:
        for n in range(40):
            ref = rng.choice([2, 3, 4])
            if rng.random() < 0.6:  # a tenant leaves or comes back (A keeps access port 1)
                tenant_changes += 1
                if ref in present:
                    del present[ref]
                else:
                    present[ref] = TENANT_POOL[ref - 1]
            elif ref == 3 and 3 in present:  # tenant C's VLAN ID moves
                tenant_changes += 1
                c = present[3]
                present[3] = dataclasses.replace(c, vlan=300 if c.vlan == 350 else 350)
            t = rng.choice(TENANT_POOL)
            rules[t.ref] = [
                Rule(dataclasses.replace(r.match, vni=Ternary.exact(t.vni, 24)), r.action)
                for r in hitless.mutate(rng, rules[t.ref], tenant_slices(t))
            ]
            new_ir = tenants_ir(present, rules)
            new_plan = drv.lower(new_ir)
            old_v = [tenant_verdict(ir, f) for f in flows]
            new_v = [tenant_verdict(new_ir, f) for f in flows]
            moved = [i for i in range(len(flows)) if old_v[i] != new_v[i]]
            kept = rng.sample([i for i in range(len(flows)) if old_v[i] == new_v[i]], k=min(8, len(flows) - len(moved)))
            watch = moved[:16] + kept
            check = Check(
                prober, [frames[i] for i in watch], [{old_v[i], new_v[i]} for i in watch], tally, f"update {n}"
            )
            result = drv.apply(new_plan, check)
            diff = sum(diff_tables(plan.tables, new_plan.tables).counts().values())
            assert check.writes == result.added + result.removed + result.modified == diff
            assert [prober.verdict(frames[i]) for i in watch] == [new_v[i] for i in watch], f"update {n}"
            ir, plan = new_ir, new_plan
        assert drv.read_state().tables == plan.tables
    finally:
        prober.close()
        drv.close()
    assert tenant_changes > 15
    assert tally.checked > 1000
    assert tally.neither == 0, str(tally)


def test_access_port_rebinding_is_hitless(trunked: tuple[str, socket.socket, socket.socket]) -> None:
    """The access port moves from tenant to tenant (a backend's ``access_ports`` edited: a new
    driver lowers against what the switch holds): untagged probes of every tenant's VNI on the
    access port, and tagged ones on the trunk, get the old or the new verdict after every
    write. On the access port the tenant is the port's: rules of other tenants never apply."""
    address, tx3, tx1 = trunked
    rng = random.Random(2003)
    present = {t.ref: t for t in TENANT_POOL[:3]}
    rules = {t.ref: [tenant_rule(rng, t) for _ in range(4)] for t in TENANT_POOL}
    ir = tenants_ir(present, rules)
    vids = [100, 200, 300]
    on_port = [f for t in TENANT_POOL[:3] for f in hitless.probe_flows(rng, 6, t)]
    on_trunk = [f for t in TENANT_POOL[:3] for f in hitless.probe_flows(rng, 4, t, t.vlan)]
    port_frames = [frame(f, 128)[0] for f in on_port]
    trunk_frames = [frame(f, 128)[0] for f in on_trunk]

    def port_verdict(vid: int, f: Flow) -> Verdict:
        tenant = next(t for t in ir.tenants if t.vlan == vid)
        own = {s.slice_id for s in ir.slices if s.tenant_vni == tenant.vni}
        scoped = hitless.rule_ir(ir, [r for r in ir.rules if r.action.slice_id in own])
        return hitless.verdict(scoped, f)

    vid = 100
    drv = Driver(
        {
            "address": address,
            "batch_size": 1,
            "timeout_s": 10,
            "election_id": 1,
            **{**TRUNK_OPTIONS, "access_ports": {1: vid}},
        }
    )
    plan = drv.lower(ir)
    drv.apply(plan, lambda e: None)
    drv.close()
    prober = TrunkProber(address, tx3, drv)  # one reader of the counters: probes one at a time
    tally = hitless.Tally()
    try:
        for n in range(12):
            new_vid = rng.choice([v for v in vids if v != vid])
            drv = Driver(
                {
                    "address": address,
                    "batch_size": 1,
                    "timeout_s": 10,
                    "election_id": n + 2,
                    **{**TRUNK_OPTIONS, "access_ports": {1: new_vid}},
                }
            )
            drv.health()  # connected: lowering keeps what the switch holds
            new_plan = drv.lower(ir)
            allowed = [{port_verdict(vid, f), port_verdict(new_vid, f)} for f in on_port]
            allowed_trunk = [{tenant_verdict(ir, f)} for f in on_trunk]  # the trunk's tenants do not change

            def check(
                e: ProgressEvent,
                n: int = n,
                allowed: list[set[Verdict]] = allowed,
                allowed_trunk: list[set[Verdict]] = allowed_trunk,
            ) -> None:
                if e.phase == "write":
                    tally.check([prober.verdict(f, tx1) for f in port_frames], allowed, f"rebind {n}, port, {e.done}")
                    tally.check(
                        [prober.verdict(f) for f in trunk_frames], allowed_trunk, f"rebind {n}, trunk, {e.done}"
                    )

            result = drv.apply(new_plan, check)
            diff = sum(diff_tables(plan.tables, new_plan.tables).counts().values())
            assert 0 < result.added + result.removed + result.modified == diff
            assert [prober.verdict(f, tx1) for f in port_frames] == [port_verdict(new_vid, f) for f in on_port]
            drv.close()
            vid, plan = new_vid, new_plan
    finally:
        prober.close()
    assert tally.checked > 500
    assert tally.neither == 0, str(tally)
