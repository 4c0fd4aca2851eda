"""Compiler behaviour: folding, path allocation, explanations and every refusal."""

from __future__ import annotations

import pytest

from sliceportal.rules.compiler import compile_rules
from sliceportal.rules.errors import AmbiguousMatchError, CompileError, MissingMatchFieldError, SpecError
from sliceportal.rules.ir import FlowKey, MissMode, MissPolicy
from sliceportal.rules.spec import ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec

ALL_FIELDS = frozenset({"src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan"})
T4 = TargetSpec(lanes=4, paths=8, match_fields=ALL_FIELDS)
TENANT = TenantSpec(ref=1, name="a", vni=100, vlan=10)
OTHER = TenantSpec(ref=2, name="b", vni=200, vlan=20)


def ip(s: str) -> int:
    a, b, c, d = map(int, s.split("."))
    return a << 24 | b << 16 | c << 8 | d


def subs(first: str, n: int, ref0: int = 1) -> tuple[SubscriberSpec, ...]:
    return tuple(SubscriberSpec(ref=ref0 + i, imsi=f"imsi{ref0 + i}", ue_ip=ip(first) + i) for i in range(n))


def a_slice(ref: int = 1, **kw: object) -> SliceSpec:
    base: dict[str, object] = {
        "ref": ref,
        "name": f"s{ref}",
        "tenant_ref": 1,
        "type_lanes": (0, 2, 4, 6),
        "services": (
            ServiceSpec("video", 4, dst_ports=((8000, 8099),)),
            ServiceSpec("ctl", 6, dst_ports=((9000, 9000),), dscp=(46,)),
        ),
        "subscribers": subs("10.1.0.0", 8),
    }
    base.update(kw)
    return SliceSpec(**base)  # type: ignore[arg-type]


def test_lanes_fold_onto_every_target_geometry() -> None:
    for lanes, expected in ((8, (0, 2, 4, 6)), (4, (0, 1, 2, 3)), (2, (0, 1)), (1, (0,))):
        target = TargetSpec(lanes=lanes, paths=4, match_fields=ALL_FIELDS)
        r = compile_rules([TENANT], [a_slice()], target)
        assert r.slices[0].lanes == expected
        assert {rule.action.lane for rule in r.ir.rules} <= set(expected)


def test_services_folding_together_share_rules_on_a_small_target() -> None:
    sl = a_slice(
        services=(
            ServiceSpec("x", 0, dst_ports=((5000, 5000),)),
            ServiceSpec("y", 2, dst_ports=((5001, 5001),)),
        )
    )
    one = compile_rules([TENANT], [sl], TargetSpec(lanes=1, paths=1, match_fields=ALL_FIELDS))
    assert len(one.ir.rules) == 1  # 5000 and 5001 merge once both fold onto lane 0
    eight = compile_rules([TENANT], [sl], TargetSpec(lanes=8, paths=1, match_fields=ALL_FIELDS))
    assert len(eight.ir.rules) == 2


def test_slice_without_services_sends_all_its_traffic_to_its_first_lane() -> None:
    r = compile_rules([TENANT], [a_slice(type_lanes=(1,), services=())], T4)
    assert len(r.ir.rules) == 1
    assert r.ir.classify(FlowKey(src_ip=ip("10.1.0.3"), dst_ip=0, dst_port=1, dscp=9)).lane == 0
    assert r.ir.rules[0].match.dst_port is None and r.ir.rules[0].match.dscp is None


def test_per_slice_paths_are_balanced_by_subscribers() -> None:
    slices = [
        a_slice(1, subscribers=subs("10.1.0.0", 100)),
        a_slice(2, subscribers=subs("10.2.0.0", 10, 1000)),
        a_slice(3, subscribers=subs("10.3.0.0", 10, 2000)),
        a_slice(4, subscribers=subs("10.4.0.0", 10, 3000)),
    ]
    r = compile_rules([TENANT], slices, TargetSpec(lanes=4, paths=2, match_fields=ALL_FIELDS))
    paths = {e.name: e.rr_paths for e in r.slices}
    assert paths["s1"] == (0,)
    assert paths["s2"] == paths["s3"] == paths["s4"] == (1,)  # 30 subscribers against 100
    assert "exclusively" in r.slices[0].path_reason and "shared" in r.slices[1].path_reason


def test_equal_slices_get_path_k_mod_paths() -> None:
    slices = [a_slice(k, subscribers=subs(f"10.{k}.0.0", 4, 100 * k)) for k in range(1, 11)]
    r = compile_rules([TENANT], slices, T4)
    assert [e.rr_paths[0] for e in r.slices] == [(k - 1) % 8 for k in range(1, 11)]


def test_dense_slice_ids_follow_slice_refs() -> None:
    slices = [a_slice(30, subscribers=subs("10.3.0.0", 2, 50)), a_slice(7)]
    r = compile_rules([TENANT], slices, T4)
    assert [(e.slice_id, e.ref) for e in r.ir.slices] == [(1, 7), (2, 30)]


def test_tunnel_keys_let_two_tenants_reuse_ue_addresses() -> None:
    a = a_slice(1, match_tunnel=True)
    b = a_slice(2, tenant_ref=2, match_tunnel=True, subscribers=subs("10.1.0.0", 8, 100))
    r = compile_rules([TENANT, OTHER], [a, b], T4)
    key = dict(src_ip=ip("10.1.0.1"), dst_ip=0, dst_port=8001, dscp=0)
    assert r.ir.classify(FlowKey(**key, vni=100, vlan=10)).slice_id == 1
    assert r.ir.classify(FlowKey(**key, vni=200, vlan=20)).slice_id == 2
    assert r.ir.classify(FlowKey(**key)).slice_id == 0  # no VXLAN: neither tenant's rule
    # the VNI is the tenant's key: its VXLAN traffic matches whether or not a trunk tagged it
    assert r.ir.classify(FlowKey(**key, vni=100)).slice_id == 1
    assert r.slices[0].keyed_on[-1] == "vni" and "vlan" not in r.slices[0].keyed_on


def test_tunnel_key_falls_back_to_the_vlan() -> None:
    target = TargetSpec(lanes=4, paths=8, match_fields=frozenset({"src_ip", "dst_port", "dscp", "vlan"}))
    r = compile_rules([TENANT], [a_slice(match_tunnel=True)], target)
    assert r.slices[0].keyed_on[-1] == "vlan"


def test_tunnel_key_skipped_with_a_warning_where_the_target_cannot() -> None:
    target = TargetSpec(lanes=4, paths=8, match_fields=frozenset({"src_ip", "dst_port", "dscp"}))
    r = compile_rules([TENANT], [a_slice(match_tunnel=True)], target)
    assert all(rule.match.vni is None for rule in r.ir.rules)
    assert any("VNI" in w for w in r.slices[0].warnings)


def test_explanation_counts() -> None:
    r = compile_rules([TENANT], [a_slice()], T4)
    e = r.slices[0]
    assert e.flows == 8 * 2 and e.subscribers == 8
    # video: 8000-8099 is 3 prefixes (/26, /27, /30); ctl: one port, one DSCP -> 8 x (3 + 1)
    assert e.rules_before == 8 * (3 + 1)
    assert e.rules_after == len(r.ir.rules) < e.rules_before
    assert dict(e.lane_map) == {0: 0, 2: 1, 4: 2, 6: 3}


def test_fits_reports_capacity() -> None:
    target = TargetSpec(lanes=4, paths=8, match_fields=ALL_FIELDS, max_rules=1)
    r = compile_rules([TENANT], [a_slice()], target)
    assert not r.fits and r.rules_after > 1


def test_fixed_miss_policy_is_carried_into_the_ir() -> None:
    miss = MissPolicy(mode=MissMode.FIXED, lane=0, rr_path=7)
    r = compile_rules([TENANT], [a_slice()], TargetSpec(lanes=4, paths=8, match_fields=ALL_FIELDS, miss=miss))
    assert r.ir.classify(FlowKey(src_ip=1, dst_ip=0, dst_port=1, dscp=63)).rr_path == 7


# ---- refusals --------------------------------------------------------------------


def test_service_lane_outside_the_slice_type() -> None:
    with pytest.raises(CompileError) as e:
        compile_rules([TENANT], [a_slice(type_lanes=(1, 3, 5, 6))], T4)
    assert e.value.service == "video" and e.value.field == "lane" and e.value.slice_ref == 1


def test_overlapping_services_with_different_lanes_are_ambiguous() -> None:
    services = (
        ServiceSpec("a", 0, dst_ports=((5000, 5010),)),
        ServiceSpec("b", 2, dst_ports=((5010, 5020),)),
    )
    with pytest.raises(AmbiguousMatchError) as e:
        compile_rules([TENANT], [a_slice(services=services)], T4)
    assert e.value.service == "b"


def test_overlapping_services_of_one_lane_are_fine() -> None:
    services = (
        ServiceSpec("a", 0, dst_ports=((5000, 5010),)),
        ServiceSpec("b", 0, dst_ports=((5005, 5020),)),
    )
    r = compile_rules([TENANT], [a_slice(services=services)], T4)
    assert r.ir.classify(FlowKey(src_ip=ip("10.1.0.0"), dst_ip=0, dst_port=5015, dscp=0)).slice_id == 1


def test_same_ports_different_dscp_are_not_ambiguous() -> None:
    services = (
        ServiceSpec("a", 0, dst_ports=((5000, 5000),), dscp=(0,)),
        ServiceSpec("b", 2, dst_ports=((5000, 5000),), dscp=(46,)),
    )
    r = compile_rules([TENANT], [a_slice(services=services)], T4)
    assert r.ir.classify(FlowKey(src_ip=ip("10.1.0.0"), dst_ip=0, dst_port=5000, dscp=46)).lane == 1


def test_any_dscp_service_beside_a_one_dscp_service_stays_small() -> None:
    # Grouping DSCP values by port set would cut "any DSCP" into 6 pieces; the per-service
    # cover keeps 2 entries, and the compiler keeps the smaller.
    services = (
        ServiceSpec("a", 0, dst_ports=((5000, 5000),)),
        ServiceSpec("b", 0, dst_ports=((6000, 6000),), dscp=(5,)),
    )
    r = compile_rules([TENANT], [a_slice(services=services, subscribers=subs("10.1.0.0", 1))], T4)
    assert r.rules_after == 2


def test_two_slices_claiming_one_ue_are_refused() -> None:
    with pytest.raises(AmbiguousMatchError) as e:
        compile_rules([TENANT], [a_slice(1), a_slice(2, subscribers=subs("10.1.0.4", 1, 99))], T4)
    assert "s1" in str(e.value) and "s2" in str(e.value)


def test_one_ue_in_two_slices_with_disjoint_services_is_fine() -> None:
    other = a_slice(
        2,
        services=(ServiceSpec("iot", 0, dst_ports=((1883, 1883),), dscp=(0,)),),
        subscribers=subs("10.1.0.4", 1, 99),
    )
    r = compile_rules([TENANT], [a_slice(1), other], T4)
    assert r.ir.classify(FlowKey(src_ip=ip("10.1.0.4"), dst_ip=0, dst_port=1883, dscp=0)).slice_id == 2


def test_missing_match_field_names_the_field() -> None:
    target = TargetSpec(lanes=4, paths=8, match_fields=frozenset({"src_ip", "dst_port"}))
    with pytest.raises(MissingMatchFieldError) as e:
        compile_rules([TENANT], [a_slice()], target)
    assert e.value.field == "dscp" and "ctl" in str(e.value)


def test_unknown_tenant_and_duplicate_refs() -> None:
    with pytest.raises(CompileError, match="tenant 9 does not exist"):
        compile_rules([TENANT], [a_slice(tenant_ref=9)], T4)
    with pytest.raises(CompileError, match="appears twice"):
        compile_rules([TENANT], [a_slice(1), a_slice(1)], T4)
    with pytest.raises(CompileError, match="appears twice"):
        compile_rules([TENANT, TENANT], [a_slice(1)], T4)


@pytest.mark.parametrize(
    "build",
    [
        lambda: ServiceSpec("x", 8),
        lambda: ServiceSpec("x", 0, dst_ports=((10, 5),)),
        lambda: ServiceSpec("x", 0, dst_ports=((0, 70000),)),
        lambda: ServiceSpec("x", 0, dscp=(64,)),
        lambda: SubscriberSpec(1, "i", ue_ip=ip("10.0.0.1"), prefix_len=24),
        lambda: SubscriberSpec(1, "i", ue_ip=1 << 32),
        lambda: TenantSpec(1, "t", vni=1 << 24),
        lambda: TenantSpec(1, "t", vni=1, vlan=4095),
        lambda: TargetSpec(lanes=3, paths=8, match_fields=frozenset()),
        lambda: TargetSpec(lanes=4, paths=8, match_fields=frozenset({"ttl"})),
        lambda: TargetSpec(lanes=4, paths=8, match_fields=frozenset(), miss=MissPolicy(MissMode.FIXED, lane=4)),
        lambda: a_slice(type_lanes=()),
        lambda: a_slice(path_mode="random"),
        lambda: a_slice(services=(ServiceSpec("x", 0), ServiceSpec("x", 2))),
    ],
)
def test_bad_specs_raise_spec_error(build: object) -> None:
    with pytest.raises(SpecError):
        build()  # type: ignore[operator]


def test_explanation_is_json_ready() -> None:
    import json

    r = compile_rules([TENANT], [a_slice()], T4)
    doc = json.loads(json.dumps(r.explain()))
    assert doc["version"] == r.ir.digest() and doc["rules_after"] == len(r.ir.rules)
    assert doc["slices"][0]["path_reason"] and doc["miss"]["mode"] == "algorithm1"
