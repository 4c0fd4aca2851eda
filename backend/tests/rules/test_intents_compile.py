"""Per-flow intents in the compiler (issue #14 item 1), as properties over random configurations.

For every packet: an intent's flow (UE of the slice named by the intent, its ports / DSCP,
its TEID where the target keys on it, the slice's tenant key) gets the intent's action;
every other packet gets exactly what it gets without any intent. Minimised and
one-rule-per-flow compilations agree, and the tuple-space classifier agrees with both.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from sliceportal.rules.compiler import CompileResult, compile_rules, intent_action, intent_ref_of, intents_overlap
from sliceportal.rules.errors import AmbiguousMatchError, CompileError
from sliceportal.rules.ir import FlowKey, RuleIR, fold_lane
from sliceportal.rules.spec import IntentSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec
from sliceportal.rules.tuplespace import TupleSpaceClassifier
from tests.rules.test_equivalence_random import (
    BASE,
    FIELDS,
    PORT_HI,
    PORT_LO,
    SLICE_TYPE_LANES,
    WINDOW,
    draw_slice,
    draw_target,
    draw_tenants,
    triple,
)


@st.composite
def intent_configs(draw: st.DrawFn) -> tuple[list[TenantSpec], list[SliceSpec], TargetSpec]:
    target = draw_target(draw)
    if draw(st.booleans()):  # a target that keys on the TEID
        target = dataclasses.replace(target, match_fields=FIELDS | {"teid"})
    n = draw(st.integers(1, 2))
    tenants = draw_tenants(draw, n)
    slices = []
    ref = 0
    for i in range(n):
        lanes = draw(st.sampled_from(SLICE_TYPE_LANES))
        subs = []
        for k in range(draw(st.integers(1, 10))):
            addr = BASE + i * WINDOW + k * 4 + draw(st.integers(0, 3))
            ref += 1
            subs.append(SubscriberSpec(ref=ref, imsi=str(ref), ue_ip=addr, teids=(1000 + ref,)))
        intents = []
        for j in range(draw(st.integers(0, 3))):
            named = draw(st.lists(st.sampled_from(subs), min_size=1, max_size=3, unique_by=lambda s: s.ref))
            ue = tuple((s.ue_ip, 32) for s in named)
            if draw(st.integers(0, 4)) == 0:  # a prefix that may reach beyond the slice's UEs
                ue = ((named[0].ue_ip & ~0xF, 28),)
            action = draw(st.sampled_from(["prioritise", "prioritise", "steer", "rate_limit", "drop"]))
            lo = draw(st.integers(PORT_LO, PORT_HI))
            intents.append(
                IntentSpec(
                    ref=i * 10 + j + 1,
                    ue=ue,
                    action=action,  # type: ignore[arg-type]
                    lane=draw(st.sampled_from(lanes)) if action == "prioritise" or draw(st.booleans()) else None,
                    rr_path=draw(st.integers(0, target.paths - 1)) if action == "steer" else None,
                    teids=tuple(t for s in named for t in s.teids) if draw(st.integers(0, 3)) == 0 else (),
                    dst_ports=((lo, draw(st.integers(lo, PORT_HI))),) if draw(st.booleans()) else (),
                    dscp=tuple(sorted(draw(st.sets(st.integers(0, 7), min_size=1, max_size=4))))
                    if draw(st.booleans())
                    else (),
                    rate_bps=draw(st.integers(1, 10**9)) if action == "rate_limit" else None,
                )
            )
        slices.append(draw_slice(draw, i, i + 1, i + 1, lanes, subs, intents=tuple(intents)))
    return tenants, slices, target


def packets(slices: list[SliceSpec]) -> st.SearchStrategy[FlowKey]:
    addrs = [s.ue_ip for sl in slices for s in sl.subscribers]
    # UEs intents name come up often, so that many packets are intent flows
    named = [a for sl in slices for i in sl.intents for a, _ in i.ue] or addrs
    teids = [t for sl in slices for s in sl.subscribers for t in s.teids]
    return st.builds(
        FlowKey,
        src_ip=st.one_of(st.sampled_from(named), st.sampled_from(addrs), st.integers(BASE - 2, BASE + 2 * WINDOW)),
        dst_ip=st.just(0),
        dst_port=st.integers(PORT_LO - 2, PORT_HI + 2),
        dscp=st.integers(0, 9),
        vni=st.sampled_from([None, 100, 101]),
        vlan=st.sampled_from([None, 10, 11]),
        teid=st.one_of(st.none(), st.sampled_from(teids), st.just(7)),
    )


def _tunnel_ok(sl: SliceSpec, tenant: TenantSpec, target: TargetSpec, key: FlowKey) -> bool:
    if not sl.match_tunnel:
        return True
    if "vni" in target.match_fields:
        return key.vni == tenant.vni
    if tenant.vlan is not None and "vlan" in target.match_fields:
        return key.vlan == tenant.vlan
    return True


def _selects(i: IntentSpec, sl: SliceSpec, target: TargetSpec, key: FlowKey) -> bool:
    """The oracle: does intent ``i`` of slice ``sl`` name this packet's flow?"""
    in_slice = any(s.first <= key.src_ip <= s.last for s in sl.subscribers)
    named = any(lo <= key.src_ip <= hi for lo, hi in i.ue_intervals)
    ports = not i.dst_ports or any(lo <= key.dst_port <= hi for lo, hi in i.dst_ports)
    dscp = not i.dscp or key.dscp in i.dscp
    teid = not i.teids or "teid" not in target.match_fields or key.teid in i.teids
    return in_slice and named and ports and dscp and teid


def sub_slices(ir: RuleIR) -> dict[tuple[int, int], int]:
    """(slice ref, intent ref) -> the sub-slice id of a rate_limit / drop intent."""
    return {(s.ref, s.intent_ref): s.slice_id for s in ir.slices if s.intent_ref is not None}


def expected(
    plain: CompileResult,
    slices: list[SliceSpec],
    tenants: dict[int, TenantSpec],
    target: TargetSpec,
    key: FlowKey,
    subs: dict[tuple[int, int], int] | None = None,
) -> tuple[int, int, int]:
    base = plain.ir.classify(key)
    for sl, ex in zip(sorted(slices, key=lambda s: s.ref), plain.slices, strict=True):
        if not _tunnel_ok(sl, tenants[sl.tenant_ref], target, key):
            continue
        for i in sorted(sl.intents, key=lambda i: i.ref):
            if not _selects(i, sl, target, key):
                continue
            # rate_limit / drop: the intent's sub-slice (its own policer), else the slice's id
            sid = ex.slice_id if i.action in ("prioritise", "steer") else (subs or {})[sl.ref, i.ref]
            if i.lane is None:  # keeping the services' lanes: only the flows a service selects
                if base.slice_id != ex.slice_id:
                    continue
                return sid, base.lane, i.rr_path if i.action == "steer" else base.rr_path  # type: ignore[return-value]
            if i.action == "steer":
                path = i.rr_path
            else:
                path = ex.rr_paths[0] if sl.path_mode == "per_slice" else key.src_ip % target.paths
            return sid, fold_lane(i.lane, target.lanes), path  # type: ignore[return-value]
    return base.slice_id, base.lane, base.rr_path


@settings(max_examples=120, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(intent_configs(), st.data())
def test_intents_move_exactly_their_flows(
    config: tuple[list[TenantSpec], list[SliceSpec], TargetSpec], data: st.DataObject
) -> None:
    tenants, slices, target = config
    try:
        small = compile_rules(tenants, slices, target)
    except AmbiguousMatchError as exc:
        # refused only for a real conflict: two intents of different actions on overlapping flows
        # (or an intent claiming another slice's ports for shared UEs, impossible here: windows differ)
        pairs = [
            (a, b)
            for sl in slices
            for n, a in enumerate(sl.intents)
            for b in sl.intents[n + 1 :]
            if intent_action(a) != intent_action(b) and intents_overlap(a, b)
        ]
        assert pairs, exc
        event("refused: conflicting intents")
        return
    big = compile_rules(tenants, slices, target, minimise=False)
    plain = compile_rules(tenants, [dataclasses.replace(s, intents=()) for s in slices], target)
    assert big.rules_after == big.rules_before and small.rules_after <= big.rules_after
    # intent rules come first and are tagged with their intent
    refs = [intent_ref_of(r.note) for r in small.ir.rules]
    n_intent = sum(r is not None for r in refs)
    assert all(r is not None for r in refs[:n_intent]) and all(r is None for r in refs[n_intent:])
    event("with intent rules" if n_intent else "no intent rules")
    tss = TupleSpaceClassifier(big.ir)
    by_ref = {t.ref: t for t in tenants}
    moved = 0
    for key in data.draw(st.lists(packets(slices), min_size=120, max_size=120)):
        want = expected(plain, slices, by_ref, target, key, sub_slices(small.ir))
        moved += want != triple(plain.ir, key)
        assert triple(small.ir, key) == want, key
        assert triple(big.ir, key) == want, key
        assert triple(tss, key) == want, key
    event("some packets moved by an intent" if moved else "no packet moved")


def _slice(*intents: IntentSpec, lanes: tuple[int, ...] = (0, 2, 4, 6)) -> SliceSpec:
    subs = tuple(SubscriberSpec(ref=u + 1, imsi=str(u), ue_ip=BASE + u, teids=(100 + u,)) for u in range(100))
    from sliceportal.rules.spec import ServiceSpec

    return SliceSpec(
        ref=1,
        name="embb",
        tenant_ref=1,
        type_lanes=lanes,
        subscribers=subs,
        match_tunnel=True,
        services=(ServiceSpec("q0", 0, ((5000, 5007),)), ServiceSpec("q6", 6, ((5024, 5031),))),
        intents=intents,
    )


T = [TenantSpec(ref=1, name="t", vni=7, vlan=100)]
P4 = TargetSpec(
    lanes=8, paths=1, match_fields=frozenset({"src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan"})
)
NETFPGA = TargetSpec(lanes=4, paths=8, match_fields=frozenset({"src_ip", "dst_ip", "dst_port", "dscp"}))


def test_one_ue_of_100_gets_one_exact_entry_per_target() -> None:
    i = IntentSpec(ref=5, ue=((BASE + 42, 32),), lane=6, teids=(142,), dst_ports=((5000, 5007),))
    p4 = compile_rules(T, [_slice(i)], P4)
    (first, *_rest) = p4.ir.rules
    assert intent_ref_of(first.note) == 5 and first.action.lane == 6
    assert first.match.src_ip is not None and first.match.src_ip.mask == 0xFFFFFFFF
    assert first.match.teid is not None and first.match.teid.value == 142  # P4 keys on the TEID
    assert p4.slices[0].intent_rules == 1 and "teid" in p4.slices[0].keyed_on
    nf = compile_rules(T, [_slice(i)], NETFPGA)
    (first, *_rest) = nf.ir.rules
    assert first.match.teid is None and first.action.lane == fold_lane(6, 4)  # no TEID key on the NetFPGA
    assert any("cannot key on the TEID" in w for w in nf.slices[0].warnings)


def test_intent_beyond_the_slice_is_clipped() -> None:
    i = IntentSpec(ref=1, ue=((0, 0),), lane=6)  # every address: only the slice's 100 UEs are meant
    ir = compile_rules(T, [_slice(i)], P4).ir
    for r in ir.rules:
        if intent_ref_of(r.note) == 1:
            assert r.match.src_ip is not None and r.match.src_ip.mask >> 25 == 0x7F  # within 10.0.0.0/25
    assert ir.classify(FlowKey(src_ip=BASE + 100, dst_ip=0, dst_port=1, dscp=0, vni=7)).rule_index is None


@pytest.mark.parametrize(
    ("intent", "field"),
    [
        (IntentSpec(ref=1, ue=((BASE, 32),), lane=5), "lane"),
        (IntentSpec(ref=1, ue=((BASE, 32),), lane=6, protocol="udp"), "protocol"),
        (IntentSpec(ref=1, ue=((BASE, 32),), action="steer", rr_path=8), "rr_path"),
    ],
)
def test_unenforceable_intents_are_refused(intent: IntentSpec, field: str) -> None:
    with pytest.raises(CompileError) as e:
        compile_rules(T, [_slice(intent)], NETFPGA)
    assert e.value.field == field


def test_rate_limit_and_drop_give_their_flows_a_sub_slice() -> None:
    """One UE of 100 to a policer of its own: the rest of the slice keeps its id and rules."""
    limit = IntentSpec(ref=7, ue=((BASE + 42, 32),), action="rate_limit", rate_bps=2_000_000)
    drop = IntentSpec(ref=8, ue=((BASE + 43, 32),), action="drop", dst_ports=((5000, 5007),))
    for target in (P4, NETFPGA):
        plain = compile_rules(T, [_slice()], target).ir
        ir = compile_rules(T, [_slice(limit, drop)], target).ir
        parent, sub7, sub8 = ir.slices
        assert (parent.slice_id, parent.intent_ref, parent.qos.rate_bps) == (1, None, None)
        assert (sub7.slice_id, sub7.ref, sub7.intent_ref, sub7.qos.rate_bps) == (2, 1, 7, 2_000_000)
        assert sub7.qos.burst_ms == 10.0  # the slice sets no burst limit: 10 ms of the rate
        assert (sub8.slice_id, sub8.ref, sub8.intent_ref, sub8.drops_all) == (3, 1, 8, True)
        for port, dscp in ((5000, 0), (5024, 3), (5030, 46)):
            k = FlowKey(src_ip=BASE + 42, dst_ip=0, dst_port=port, dscp=dscp, vni=7, vlan=100)
            d, base = ir.classify(k), plain.classify(k)
            assert (d.slice_id, d.lane, d.rr_path) == (2, base.lane, base.rr_path)  # only the policer changes
        dropped = ir.classify(FlowKey(src_ip=BASE + 43, dst_ip=0, dst_port=5003, dscp=0, vni=7, vlan=100))
        kept = ir.classify(FlowKey(src_ip=BASE + 43, dst_ip=0, dst_port=5024, dscp=0, vni=7, vlan=100))
        assert dropped.slice_id == 3 and kept.slice_id == 1  # only the intent's ports
        for ue in (0, 41, 44, 99):
            k = FlowKey(src_ip=BASE + ue, dst_ip=0, dst_port=5001, dscp=0, vni=7, vlan=100)
            assert ir.classify(k).slice_id == 1
        assert sub7.lanes == tuple(sorted({r.action.lane for r in ir.rules if r.action.slice_id == 2}))


def test_rate_limit_above_the_slices_own_limit_is_refused() -> None:
    from sliceportal.rules.ir import Qos

    i = IntentSpec(ref=1, ue=((BASE, 32),), action="rate_limit", rate_bps=20_000_000)
    sl = dataclasses.replace(_slice(i), qos=Qos(rate_bps=10_000_000))
    with pytest.raises(CompileError, match="above the slice's own rate limit") as e:
        compile_rules(T, [sl], P4)
    assert e.value.field == "rate_mbps"
    ok = dataclasses.replace(i, rate_bps=5_000_000)
    compile_rules(T, [dataclasses.replace(sl, intents=(ok,))], P4)


@pytest.mark.parametrize("rate", [None, 0, -5])
def test_rate_limit_needs_a_rate(rate: int | None) -> None:
    from sliceportal.rules.errors import SpecError

    with pytest.raises(SpecError) as e:
        IntentSpec(ref=1, ue=((BASE, 32),), action="rate_limit", rate_bps=rate)
    assert e.value.field == "rate_mbps"


def test_two_rate_limits_of_overlapping_flows_conflict() -> None:
    a = IntentSpec(ref=3, ue=((BASE + 1, 32),), action="rate_limit", rate_bps=1_000_000)
    b = IntentSpec(ref=4, ue=((BASE, 30),), action="rate_limit", rate_bps=1_000_000)
    with pytest.raises(AmbiguousMatchError, match=r"intents 3 \(rate_limit\) and 4 \(rate_limit\)"):
        compile_rules(T, [_slice(a, b)], P4)
    c = IntentSpec(ref=5, ue=((BASE + 1, 32),), action="drop")
    with pytest.raises(AmbiguousMatchError, match=r"intents 3 \(rate_limit\) and 5 \(drop\)"):
        compile_rules(T, [_slice(a, c)], P4)


def test_conflicting_intents_are_refused_naming_both() -> None:
    a = IntentSpec(ref=3, ue=((BASE + 1, 32),), lane=6)
    b = IntentSpec(ref=4, ue=((BASE, 30),), lane=2, dst_ports=((5000, 5000),))
    with pytest.raises(AmbiguousMatchError, match=r"intents 3 .* and 4"):
        compile_rules(T, [_slice(a, b)], P4)
    same = IntentSpec(ref=4, ue=((BASE, 30),), lane=6, dst_ports=((5000, 5000),))
    compile_rules(T, [_slice(a, same)], P4)  # same action on overlapping flows: no conflict
