"""Admission (seed 004 §V-B): Eq. 1-4 by hand, and Fig. 15 from Tables I-III."""

from __future__ import annotations

import pytest

from sliceportal.rules.admission import SliceDemand, admit, port_loads, required_capacity, worst_case

MBIT = 1e6
# seed 004 Table II (BMv2 column): rate limit, burst limit; Table III: priority per case
RATES = {"DC": 48, "Enterprise": 12, "Peering": 240}
BURST_MS = {"DC": 20, "Enterprise": 10, "Peering": 30}
CASES = {"A": (7, 7, 7), "B": (7, 6, 6), "C": (7, 7, 6), "D": (7, 6, 5)}


def table2(case: str, **bounds: float) -> list[SliceDemand]:
    return [
        SliceDemand(name, prio, RATES[name] * MBIT, BURST_MS[name], bounds.get(name))
        for name, prio in zip(RATES, CASES[case], strict=True)
    ]


def test_case_c_at_330_by_hand() -> None:
    # bursts: DC 48 Mbit/s x 20 ms = 0.96 Mbit, Ent. 0.12 Mbit, Peering 7.2 Mbit
    v = {x.name: x for x in worst_case(table2("C"), 330 * MBIT)}
    # priority 7 (DC, Ent.) sees the whole link: (0.96 + 0.12) / 330 = 3.2727 ms
    assert v["DC"].worst_delay_ms == pytest.approx(1.08 / 330 * 1e3)
    assert v["Enterprise"].worst_delay_ms == pytest.approx(1.08 / 330 * 1e3)
    # Peering (6) adds its own burst at 330 - 48 - 12 = 270 Mbit/s: 3.2727 + 26.667 ms
    assert v["Peering"].worst_delay_ms == pytest.approx((1.08 / 330 + 7.2 / 270) * 1e3)
    assert [t.residual_bps for t in v["Peering"].terms] == [330 * MBIT, 330 * MBIT, 270 * MBIT]


def test_fig15_case_a_needs_1650_mbit_for_5_ms_on_dc() -> None:
    # no prioritisation: every burst counts at the full link, 8.28 Mbit / 5 ms = 1656 Mbit/s
    c = required_capacity(table2("A", DC=5.0))
    assert c == pytest.approx(1656 * MBIT, rel=1e-3)
    assert c == pytest.approx(1650 * MBIT, rel=0.01)  # the paper's figure, read off its graph


@pytest.mark.parametrize("case", ["C", "D"])
def test_fig15_cases_c_and_d_need_330_mbit_for_the_burst_limits(case: str) -> None:
    c = required_capacity(table2(case), bound=lambda s: BURST_MS[s.name])
    assert c == pytest.approx(330 * MBIT, rel=0.01)
    assert not admit(table2(case, **BURST_MS), c - 2 * MBIT).ok
    assert admit(table2(case, **BURST_MS), c).ok


def test_case_b_is_not_enough_at_330() -> None:
    # DC alone above Ent. + Peering: the 7.32 Mbit of the two share 330 - 48 = 282 Mbit/s
    v = {x.name: x for x in worst_case(table2("B"), 330 * MBIT)}
    assert v["Peering"].worst_delay_ms == pytest.approx((0.96 / 330 + 7.32 / 282) * 1e3)


def test_refusal_names_every_term_and_the_guarantees() -> None:
    slices = [
        SliceDemand("a", 1, 600 * MBIT, 10, delay_bound_ms=5, guaranteed_bps=600 * MBIT),
        SliceDemand("b", 1, 600 * MBIT, 10, delay_bound_ms=50, guaranteed_bps=600 * MBIT),
    ]
    result = admit(slices, 1000 * MBIT)
    assert not result.ok and not result.guarantees_fit
    reasons = result.refusals()
    assert reasons[0].startswith("guaranteed rates add up to 1200 Mbit/s")
    assert "slice a: worst-case delay 12.00 ms" in reasons[1] and "exceeds its bound of 5 ms" in reasons[1]
    assert len(reasons) == 2  # b's 12 ms is within its 50 ms


def test_a_lower_priority_with_nothing_left_is_unbounded() -> None:
    slices = [SliceDemand("hi", 2, 1000 * MBIT, 10), SliceDemand("lo", 1, 10 * MBIT, 10, delay_bound_ms=100)]
    v = {x.name: x for x in worst_case(slices, 1000 * MBIT)}
    assert v["lo"].worst_delay_ms == float("inf") and not v["lo"].ok


def test_port_loads_sum_the_bound_slices_guarantees_per_port() -> None:
    loads = port_loads(
        {"3": 50e6, "1": 200e6, "x": 10e6},
        {"3": ["a", "b"], "1": ["a", "b", "c"], "x": ["none"]},
        {"a": 40e6, "b": 20e6, "c": 30e6},
    )
    assert [p.port for p in loads] == ["1", "3", "x"]  # numbered ports in order, named ones after
    one, three, x = loads
    assert three.terms == (("a", 40e6), ("b", 20e6)) and three.guaranteed_bps == 60e6 and not three.ok
    assert one.guaranteed_bps == 90e6 and one.ok
    assert x.terms == () and x.ok  # a slice without a guarantee adds no term


def test_a_port_at_exactly_its_capacity_fits() -> None:
    [p] = port_loads({"2": 60e6}, {"2": ["a", "b"]}, {"a": 40e6, "b": 20e6})
    assert p.ok and p.guaranteed_bps == p.capacity_bps
