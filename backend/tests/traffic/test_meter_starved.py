"""Per-interval reports with the sender's progress (``interval_report(sent_before=...)``, the
live testbed's meters): a flow its data plane starves shows its loss every interval instead
of vanishing, a flow this meter never received is left alone, and packets that arrive
within the grace period are not counted lost."""

from __future__ import annotations

from sliceportal.traffic.meter import Meter


def _lane(report, lane):  # type: ignore[no-untyped-def]
    return next(g for g in report.lanes if g.lane == lane)


def test_a_starved_flow_shows_its_loss_each_interval() -> None:
    m = Meter({1: (7, 0), 2: (7, 6), 3: (8, 0)})
    for seq in range(10):  # interval 1: flows 1 and 2 arrive in full
        m.add(1, seq, 0, 1_000, 100)
        m.add(2, seq, 0, 1_000, 100)
    first = m.interval_report(sent_before={1: 10, 2: 10})
    assert _lane(first, 0).lost == 0 and _lane(first, 6).lost == 0
    for seq in range(10, 20):  # interval 2: the data plane starves flow 1, flow 2 goes on
        m.add(2, seq, 0, 1_000, 100)
    # the sender had sent 20 of each two seconds ago; flow 3 was never received here
    second = m.interval_report(sent_before={1: 20, 2: 20, 3: 50})
    starved = _lane(second, 0)
    assert (starved.expected, starved.received, starved.loss_pct) == (10, 0, 100.0)
    assert _lane(second, 6).lost == 0
    assert all(g.slice_index != 8 for g in second.lanes)  # not this meter's flow: no loss invented


def test_packets_still_in_flight_are_not_lost() -> None:
    m = Meter({1: (7, 0)})
    for seq in range(5):
        m.add(1, seq, 0, 1_000, 100)
    # 10 sent, but only 5 of them before the grace period: those arrived, the rest may still queue
    report = m.interval_report(sent_before={1: 5})
    assert _lane(report, 0).lost == 0
    without = Meter({1: (7, 0)}).interval_report()
    assert without.lanes == []
