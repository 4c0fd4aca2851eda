"""Property: for random configurations and random packets, minimised == one-rule-per-flow."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.errors import AmbiguousMatchError
from sliceportal.rules.ir import Action, FlowKey, Match, Rule, RuleIR, Ternary
from sliceportal.rules.spec import ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec
from sliceportal.rules.tuplespace import TupleSpaceClassifier

BASE = 10 << 24
WINDOW = 64  # addresses per slice
PORT_LO, PORT_HI = 5000, 5047
SLICE_TYPE_LANES = [(0,), (7,), (0, 2), (1, 6), (0, 2, 4), (0, 2, 4, 6), (1, 3, 5, 6)]
FIELDS = frozenset({"src_ip", "dst_ip", "dst_port", "dscp", "vni", "vlan"})


@st.composite
def services(draw: st.DrawFn, lanes: tuple[int, ...]) -> tuple[ServiceSpec, ...]:
    any_port = draw(st.integers(0, 5)) == 0  # then one segment: every port
    cuts = [] if any_port else sorted(draw(st.sets(st.integers(PORT_LO + 1, PORT_HI), max_size=4)))
    bounds = [PORT_LO, *cuts, PORT_HI + 1]
    out: list[ServiceSpec] = []
    for i, (lo, hi) in enumerate(itertools.pairwise(bounds)):
        if draw(st.booleans()):
            continue  # a gap: those ports belong to no service
        ports = () if any_port else ((lo, hi - 1),)
        if draw(st.booleans()):
            split = draw(st.sets(st.integers(0, 7), min_size=1, max_size=7))
            rest = tuple(sorted(set(range(8)) - split))
            out.append(ServiceSpec(f"s{i}a", draw(st.sampled_from(lanes)), ports, tuple(sorted(split))))
            out.append(ServiceSpec(f"s{i}b", draw(st.sampled_from(lanes)), ports, rest))
        else:
            dscp = tuple(sorted(draw(st.sets(st.integers(0, 63), max_size=6))))
            out.append(ServiceSpec(f"s{i}", draw(st.sampled_from(lanes)), ports, dscp))
    return tuple(out)


def draw_target(draw: st.DrawFn, match_fields: frozenset[str] = FIELDS) -> TargetSpec:
    return TargetSpec(
        lanes=draw(st.sampled_from([1, 2, 4, 8])), paths=draw(st.sampled_from([1, 2, 4, 8])), match_fields=match_fields
    )


def draw_tenants(draw: st.DrawFn, n: int) -> list[TenantSpec]:
    """Tenants 1..n: VNI 100 + i, each with or without a VLAN ID."""
    return [
        TenantSpec(ref=i + 1, name=f"t{i}", vni=100 + i, vlan=draw(st.sampled_from([None, 10 + i]))) for i in range(n)
    ]


def draw_slice(
    draw: st.DrawFn, i: int, ref: int, tenant_ref: int, lanes: tuple[int, ...], subs: list[SubscriberSpec], **more: Any
) -> SliceSpec:
    """Slice ``i`` of a drawn configuration: its services on ``lanes``, path mode and tunnel match drawn."""
    return SliceSpec(
        ref=ref,
        name=f"slice{i}",
        tenant_ref=tenant_ref,
        type_lanes=lanes,
        services=draw(services(lanes)),
        subscribers=tuple(subs),
        path_mode=draw(st.sampled_from(["per_slice", "per_user_group"])),
        match_tunnel=draw(st.booleans()),
        **more,
    )


@st.composite
def configs(draw: st.DrawFn) -> tuple[list[TenantSpec], list[SliceSpec], TargetSpec]:
    target = draw_target(draw)
    n = draw(st.integers(1, 3))
    tenants = draw_tenants(draw, n)
    slices = []
    ref = 0
    for i in range(n):
        lanes = draw(st.sampled_from(SLICE_TYPE_LANES))
        subs = []
        for _ in range(draw(st.integers(0, 12))):
            plen = draw(st.sampled_from([32, 32, 32, 31, 30, 29, 28]))
            size = 1 << (32 - plen)
            addr = BASE + i * WINDOW + draw(st.integers(0, WINDOW // size - 1)) * size
            ref += 1
            subs.append(SubscriberSpec(ref=ref, imsi=str(ref), ue_ip=addr, prefix_len=plen))
        ref = draw(st.integers(1, 1000)) * 10 + i  # unique, random order
        slices.append(draw_slice(draw, i, ref, i + 1, lanes, subs))
    return tenants, slices, target


def packets(n_slices: int) -> st.SearchStrategy[FlowKey]:
    return st.builds(
        FlowKey,
        src_ip=st.integers(BASE - 4, BASE + n_slices * WINDOW + 4),
        dst_ip=st.just(0),
        dst_port=st.integers(PORT_LO - 3, PORT_HI + 3),
        dscp=st.one_of(st.integers(0, 8), st.integers(0, 63)),
        vni=st.sampled_from([None, 100, 101, 102]),
        vlan=st.sampled_from([None, 10, 11, 12]),
    )


def triple(ir: RuleIR | TupleSpaceClassifier, key: FlowKey) -> tuple[int, int, int]:
    d = ir.classify(key)
    return d.slice_id, d.lane, d.rr_path


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(configs(), st.data())
def test_minimised_equals_unminimised(
    config: tuple[list[TenantSpec], list[SliceSpec], TargetSpec], data: st.DataObject
) -> None:
    tenants, slices, target = config
    small = compile_rules(tenants, slices, target)
    big = compile_rules(tenants, slices, target, minimise=False)
    assert small.rules_after <= big.rules_after  # minimisation never costs entries
    assert big.rules_after == big.rules_before  # the count the preview shows is the real baseline
    tss = TupleSpaceClassifier(big.ir)
    # every corner of every subscriber block, with every service's edge ports
    corners = [s.first for sl in slices for s in sl.subscribers] + [s.last for sl in slices for s in sl.subscribers]
    for key in data.draw(st.lists(packets(len(slices)), min_size=100, max_size=100)) + [
        FlowKey(src_ip=a, dst_ip=0, dst_port=p, dscp=d, vni=100 + i, vlan=10 + i)
        for a in corners[:20]
        for p in (PORT_LO, PORT_HI)
        for d in (0, 7)
        for i in range(len(slices))
    ]:
        expected = triple(big.ir, key)
        assert triple(small.ir, key) == expected, key
        assert triple(tss, key) == expected


ternary4 = st.builds(lambda v, m: Ternary(v & m, m), st.integers(0, 15), st.integers(0, 15))


@settings(max_examples=100, deadline=None)
@given(
    st.lists(
        st.tuples(st.one_of(st.none(), ternary4), st.one_of(st.none(), ternary4), st.integers(1, 3)),
        max_size=12,
    ),
    st.lists(
        st.tuples(st.integers(0, 15), st.integers(0, 15), st.sampled_from([None, 1])),
        min_size=30,
        max_size=30,
    ),
)
def test_tuple_space_classifier_is_first_match(
    rules: list[tuple[Ternary | None, Ternary | None, int]], keys: list[tuple[int, int, int | None]]
) -> None:
    # Overlapping rules with different actions: the lowest index must win, as in a TCAM.
    ir = RuleIR(
        lanes=4,
        paths=4,
        rules=tuple(Rule(Match(src_ip=a, vni=b), Action(s, s, s)) for a, b, s in rules),
    )
    tss = TupleSpaceClassifier(ir)
    for src, vni, present in keys:
        key = FlowKey(src_ip=src, dst_ip=0, dst_port=0, dscp=0, vni=vni if present else None)
        assert tss.classify(key) == ir.classify(key)


@st.composite
def overlapping_configs(draw: st.DrawFn) -> tuple[list[TenantSpec], list[SliceSpec], TargetSpec]:
    """Slices share one address window and tenants, so many configurations are ambiguous."""
    target = TargetSpec(lanes=4, paths=draw(st.sampled_from([1, 8])), match_fields=FIELDS)
    tenants = [TenantSpec(ref=1, name="t1", vni=100, vlan=10), TenantSpec(ref=2, name="t2", vni=101, vlan=None)]
    slices = []
    for i in range(draw(st.integers(2, 3))):
        lanes = draw(st.sampled_from(SLICE_TYPE_LANES))
        subs = [
            SubscriberSpec(ref=i * 100 + j, imsi=f"{i}-{j}", ue_ip=BASE + draw(st.integers(0, 15)))
            for j in range(draw(st.integers(1, 4)))
        ]
        slices.append(draw_slice(draw, i, i + 1, draw(st.sampled_from([1, 2])), lanes, subs))
    return tenants, slices, target


@settings(max_examples=150, deadline=None)
@given(overlapping_configs(), st.data())
def test_a_compiled_configuration_never_gives_one_packet_two_actions(
    config: tuple[list[TenantSpec], list[SliceSpec], TargetSpec], data: st.DataObject
) -> None:
    # The minimiser relies on it: rules of different actions are disjoint, so order is free.
    tenants, slices, target = config
    try:
        ir = compile_rules(tenants, slices, target, minimise=False).ir
    except AmbiguousMatchError:
        event("refused as ambiguous")
        return
    event("compiled")
    for key in data.draw(st.lists(packets(1), min_size=150, max_size=150)):
        actions = {r.action for r in ir.rules if r.match.matches(key)}
        assert len(actions) <= 1, (key, actions)
    small = compile_rules(tenants, slices, target).ir
    reversed_ir = RuleIR(lanes=small.lanes, paths=small.paths, rules=small.rules[::-1], miss=small.miss)
    for key in data.draw(st.lists(packets(1), min_size=50, max_size=50)):
        assert triple(small, key) == triple(reversed_ir, key) == triple(ir, key)
