"""Classification equals ``RuleIR.classify``: random IRs and random packets, checked
against the lowering's model (no privileges) and against the kernel (BPF_PROG_TEST_RUN)."""

from __future__ import annotations

import ipaddress
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from sliceportal.rules.ir import Action, Match, MissMode, MissPolicy, Rule, RuleIR, Ternary
from sliceportal.traffic.packets import Encap, Flow, build_bytes
from sliceportal_xdp import layout
from sliceportal_xdp.driver import Driver
from sliceportal_xdp.lowering import NonPrefixMaskError, first_rule

from .conftest import noop

LANES, PATHS = 4, 8
# small pools so that random rules and random packets actually meet
IPS = [int(ipaddress.IPv4Address(a)) for a in ("10.0.0.1", "10.0.0.2", "10.0.1.7", "10.128.0.1", "192.168.5.9")]
PORTS = [5000, 5002, 5003, 5004, 80, 443]
TUNNEL = [0, 1, 2, 3, 7, 100]
VLANS = [1, 2, 100]


def ternaries(width: int, pool: list[int]) -> st.SearchStrategy[Ternary | None]:
    full = (1 << width) - 1

    def prefix(v: int, plen: int) -> Ternary:
        return Ternary.prefix(v, plen, width)

    def holes(v: int, mask: int) -> Ternary:
        return Ternary(v & mask, mask)

    # masks with a few holes (non-prefix) must still be exact
    hole_masks = st.integers(0, 2).flatmap(
        lambda n: st.lists(st.integers(0, width - 1), min_size=n, max_size=n).map(
            lambda bits: full & ~sum(1 << b for b in set(bits))
        )
    )
    return st.one_of(
        st.none(),
        st.sampled_from(pool).map(lambda v: Ternary.exact(v, width)),
        st.tuples(st.sampled_from(pool), st.integers(0, width)).map(lambda t: prefix(*t)),
        st.tuples(st.sampled_from(pool), hole_masks).map(lambda t: holes(*t)),
    )


def tunnel_ternaries(width: int, pool: list[int]) -> st.SearchStrategy[Ternary | None]:
    full = (1 << width) - 1
    return st.one_of(
        st.none(),
        st.just(Ternary(0, 0)),  # header present, any value
        st.sampled_from(pool).map(lambda v: Ternary.exact(v, width)),
        st.tuples(st.sampled_from(pool), st.integers(0, 3)).map(
            lambda t: Ternary(t[0] & (full ^ ((1 << t[1]) - 1)), full ^ ((1 << t[1]) - 1))
        ),
    )


matches = st.builds(
    Match,
    src_ip=ternaries(32, IPS),
    dst_ip=ternaries(32, IPS),
    dst_port=ternaries(16, PORTS),
    dscp=ternaries(6, list(range(8))),
    vni=tunnel_ternaries(24, TUNNEL),
    teid=tunnel_ternaries(32, TUNNEL),
    vlan=tunnel_ternaries(12, VLANS),
)
actions = st.builds(
    Action, slice_id=st.integers(1, 5), lane=st.integers(0, LANES - 1), rr_path=st.integers(0, PATHS - 1)
)
misses = st.one_of(
    st.just(MissPolicy()),
    st.builds(
        MissPolicy,
        mode=st.just(MissMode.FIXED),
        lane=st.integers(0, LANES - 1),
        rr_path=st.integers(0, PATHS - 1),
    ),
)
irs = st.builds(
    lambda rules, miss: RuleIR(lanes=LANES, paths=PATHS, rules=tuple(rules), miss=miss),
    st.lists(st.builds(Rule, match=matches, action=actions), max_size=12),
    misses,
)
flows = st.builds(
    Flow,
    src_ip=st.sampled_from(IPS).map(lambda v: str(ipaddress.IPv4Address(v))),
    dst_ip=st.sampled_from(IPS).map(lambda v: str(ipaddress.IPv4Address(v))),
    dst_port=st.sampled_from([*PORTS, 5001, 9999]),
    dscp=st.integers(0, 63),
    proto=st.sampled_from(["udp", "tcp"]),
    vni=st.sampled_from([*TUNNEL, 4, 101]),
    teid=st.sampled_from([*TUNNEL, 4, 0xFFFFFFFF]),
    vlan=st.one_of(st.none(), st.sampled_from([*VLANS, 3])),
    encap=st.sampled_from(list(Encap)),
)


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(ir=irs, packets=st.lists(flows, min_size=1, max_size=10))
def test_lowered_tables_model_equals_classify(ir: RuleIR, packets: list[Flow]) -> None:
    plan = Driver({}).lower(ir)
    for f in packets:
        assert first_rule(plan.tables, f.key()) == ir.classify(f.key()).rule_index


@pytest.mark.needs_root
@settings(
    max_examples=60,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(ir=irs, packets=st.lists(flows, min_size=1, max_size=16))
def test_kernel_classification_equals_classify(driver: Driver, ir: RuleIR, packets: list[Flow]) -> None:
    driver.apply(driver.lower(ir), noop)
    for f in packets:
        driver.run(build_bytes(f, b"data"))
        got = driver.last_decision()
        want = ir.classify(f.key())
        rule = None if got.rule == layout.MISS_INDEX else got.rule
        assert (rule, got.slice_id, got.lane, got.rr_path) == (
            want.rule_index,
            want.slice_id,
            want.lane,
            want.rr_path,
        ), f


@pytest.fixture(scope="module")
def uncached() -> Iterator[Driver]:
    d = Driver({"record_last": True, "flow_cache": False, "overload_poll_s": 0})
    yield d
    d.close()


@pytest.mark.needs_root
@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture]
)
@given(ir=irs, packets=st.lists(flows, min_size=1, max_size=16))
def test_kernel_classification_without_the_flow_cache(uncached: Driver, ir: RuleIR, packets: list[Flow]) -> None:
    test_kernel_classification_equals_classify.hypothesis.inner_test(uncached, ir, packets)  # type: ignore[attr-defined]


def test_many_holes_in_an_address_mask_are_refused() -> None:
    mask = 0xFFFFFFFF & ~0x0F0F0000  # 8 holes -> 256 prefixes is the limit; 9 is too many
    ir = RuleIR(lanes=LANES, paths=PATHS, rules=(Rule(Match(src_ip=Ternary(0, mask & ~0x100)), Action(1, 0, 0)),))
    with pytest.raises(NonPrefixMaskError) as e:
        Driver({}).lower(ir)
    assert "src_ip" in str(e.value) and "512" in str(e.value)
