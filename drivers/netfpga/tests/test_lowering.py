"""Lowering is exact: the TCAM semantics (lowest matching entry) over the lowered entries
give ``RuleIR.classify`` for every key; register words round-trip."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from sliceportal.rules.ir import FIELD_WIDTHS, Action, FlowKey, Match, Rule, RuleIR, Ternary
from sliceportal_netfpga.tcam import TcamEntry, lower_rules, pack_key

FIELDS = ("src_ip", "dst_ip", "dst_port", "dscp")


@st.composite
def ternaries(draw: st.DrawFn, width: int) -> Ternary | None:
    kind = draw(st.sampled_from(["none", "prefix", "any"]))
    if kind == "none":
        return None
    if kind == "prefix":
        return Ternary.prefix(draw(st.integers(0, (1 << width) - 1)), draw(st.integers(0, width)), width)
    mask = draw(st.integers(0, (1 << width) - 1))
    return Ternary(draw(st.integers(0, (1 << width) - 1)) & mask, mask)


@st.composite
def irs(draw: st.DrawFn) -> RuleIR:
    n = draw(st.integers(0, 12))
    rules = tuple(
        Rule(
            Match(**{f: draw(ternaries(FIELD_WIDTHS[f])) for f in FIELDS}),
            Action(draw(st.integers(1, 16)), draw(st.integers(0, 3)), draw(st.integers(0, 7))),
        )
        for _ in range(n)
    )
    return RuleIR(lanes=4, paths=8, rules=rules)


def keys_for(ir: RuleIR) -> st.SearchStrategy[FlowKey]:
    anything = st.builds(
        FlowKey, st.integers(0, 2**32 - 1), st.integers(0, 2**32 - 1), st.integers(0, 2**16 - 1), st.integers(0, 63)
    )
    if not ir.rules:
        return anything

    @st.composite
    def near(draw: st.DrawFn) -> FlowKey:
        # A key satisfying one rule's care bits, random elsewhere.
        rule = draw(st.sampled_from(ir.rules))
        vals = {}
        for f in FIELDS:
            t = getattr(rule.match, f)
            r = draw(st.integers(0, (1 << FIELD_WIDTHS[f]) - 1))
            vals[f] = r if t is None else (t.value | (r & ~t.mask & ((1 << FIELD_WIDTHS[f]) - 1)))
        return FlowKey(**vals)

    return st.one_of(anything, near())


@settings(max_examples=200, deadline=None)
@given(st.data())
def test_tcam_semantics_equal_the_reference(data: st.DataObject) -> None:
    ir = data.draw(irs())
    entries = lower_rules(ir)
    assert [TcamEntry.from_words(e.words()) for e in entries] == entries
    for _ in range(20):
        key = data.draw(keys_for(ir))
        want = ir.classify(key)
        packed = (key.src_ip << 54) | (key.dst_ip << 22) | (key.dscp << 16) | key.dst_port
        hit = next((i for i, e in enumerate(entries) if packed & pack_key(e.mask) == pack_key(e.key)), None)
        assert hit == want.rule_index
        if hit is not None:
            a = entries[hit].action
            assert (a.slice_id, a.lane, a.rr_path) == (want.slice_id, want.lane, want.rr_path)
