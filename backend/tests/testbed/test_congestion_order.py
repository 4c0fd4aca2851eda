"""The congestion scenario on the live testbed degrades lanes in seed 000 Table 5 order on
each of the three data planes: red-embb's best-effort lane loses, its highest lane keeps
(almost) everything, and every lane recovers afterwards.

Offered load and capacity, by hand (``seed_demo(users_per_slice=4)``; the testbed sends
every flow round robin at the same rate, so a lane's share is its flows / all flows):

- flows per plane: red-embb 4 users x 4 services (lanes 0/2/4/6, 4 flows each), red-iot
  4 x 1 (lane 0), blue-urllc 4 x 4 (lanes 1/3/5/6) = 36 flows; a flow sends base / 36.
- congestion at FACTOR 2 lowers the plane's egress capacity to C = base / 2 while the
  offered load stays ``base`` (``testbed/congestion.py``).
- **P4** (base 300 pps, 8.33 pps a flow, 8 strict-priority queues over all slices, lane = queue):
  lane 6 = red 4 + blue 4 flows = 66.7 pps, lanes 5, 4, 3 = 33.3 each -> cumulative 66.7,
  100, 133.3, 166.7 against C = 150: lanes 6/5/4 fit, lane 3 loses half, lanes 2/1/0 starve.
  red-embb lane 6 (66.7 of 150) loses nothing, lane 0 loses ~100 %.
- **NetFPGA** (base 150 pps, 4.17 pps a flow, lanes folded l >> 1 to 4, round robin over
  the slices' paths, strict priority inside a path): per path red 66.7 (16.7 a folded lane),
  blue 66.7, iot 16.7 against C = 75: fair share 25 a path; iot uses 16.7, red and blue
  get 29.2 each. red lane 6 (folded 3, 16.7) fits with 12.5 to spare; lane 4 gets 12.5 of
  16.7 (~25 % loss); lanes 2 and 0 starve (~100 %). (With every slice on one path, strict
  priority alone: folded 3 + 2 = 66.7 of 75 fit, lane 0 still starves.)
- **XDP** (base = the configured 1500 pps, 41.7 pps a flow, lanes folded to 4, the
  program's lane-priority egress budget at C = 750 pps): folded lane 3 = 8 flows = 333,
  lane 2 = 8 flows = 333 -> 667 of 750; lane 1 gets the remaining ~83 of 333; lane 0 (12 flows)
  starves. red lane 6 (folded 3) loses nothing, lane 0 ~100 %.

So lane 0 >= 30 % and lane 6 <= 2 % holds with a wide margin on each plane. The check can
fail, and did on the FIFO cap this replaced (commit 1318ea7: offered load x factor into a
``tc tbf`` on the ingress link): the same measurement there, factor 2, gave red-embb lanes
0/2/4/6 26/77/24/72 % on XDP, 85/12/84/15 % on the P4 target and 50/51/51/54 % on the
NetFPGA model — lane 6 far above 2 % everywhere.
"""

from __future__ import annotations

import time
from datetime import UTC, datetime, timedelta

import pytest
from fastapi.testclient import TestClient
from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.main import create_app
from sliceportal.models import KpiSample, Role, Slice
from sliceportal.services.bootstrap_data import seed_demo
from tests.factories import live_testbed_settings, login, make_user, running_controller, wait_until

pytestmark = pytest.mark.needs_root

FACTOR = 2
SETTLE_S = 3.0  # queues fill (and the sender's rate settles) before the window
WINDOW_S = 7.0
APPLY_S = 8.0  # the traffic step applies a scenario within this
DURATION_S = SETTLE_S + WINDOW_S + APPLY_S + 2  # the window ends inside the scenario however late it applied


def test_congestion_degrades_lanes_in_table_5_order_on_every_plane(db_url: str, session: Session) -> None:
    seed_demo(session, users_per_slice=4)
    make_user(session, "op", Role.OPERATOR)
    settings = live_testbed_settings("c", 1500)
    with TestClient(create_app(settings, db_url)) as client, running_controller(settings, db_url):
        op = login(client, "op")
        planes = {b["driver"]: b for b in client.get("/api/v1/testbed", headers=op).json()["backends"]}
        assert set(planes) == {"xdp", "p4rt", "netfpga"} and all(b["up"] for b in planes.values()), planes
        ids = {d: b["backend_id"] for d, b in planes.items()}
        embb = session.scalar(select(Slice).where(Slice.name == "red-embb"))
        assert embb is not None

        def loss(backend_id: int, since: datetime, until: datetime | None = None) -> dict[int, float]:
            session.expire_all()
            q = select(KpiSample.lane, func.sum(KpiSample.tx_packets), func.sum(KpiSample.rx_packets)).where(
                KpiSample.slice_id == embb.id,
                KpiSample.backend_id == backend_id,
                KpiSample.source == "testbed",  # end to end (the P4 target counts no queue drops)
                KpiSample.ts > since,
            )
            if until is not None:
                q = q.where(KpiSample.ts <= until)
            rows = session.execute(q.group_by(KpiSample.lane)).all()
            return {lane: float(100 * (tx - rx) / tx) for lane, tx, rx in rows if tx}

        seen: dict[str, dict[int, float]] = {}

        def all_lanes_clean() -> dict[str, dict[int, float]] | None:
            since = datetime.now(UTC) - timedelta(seconds=3)
            seen.update({d: loss(i, since) for d, i in ids.items()})
            ok = all(set(g) == {0, 2, 4, 6} and max(g.values()) < 2 for g in seen.values())
            return dict(seen) if ok else None

        try:
            wait_until("every lane of red-embb flowing without loss on all three planes", all_lanes_clean, 60)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; loss % per plane and lane: {seen}") from None

        # all three at once: each plane has links of its own, and a congestion scenario lowers
        # a plane's capacity rather than adding load to this machine
        for driver in ids:
            r = client.post(
                "/api/v1/testbed/congestion",
                json={"backend_id": ids[driver], "duration_s": DURATION_S, "factor": FACTOR},
                headers=op,
            )
            assert r.status_code == 202, r.text
        for b in client.get("/api/v1/testbed", headers=op).json()["backends"]:
            assert b["congestion_factor"] == FACTOR, b
        shown: list[dict] = []

        def capacity_applied() -> bool:
            # the traffic step applies it (once a second, slower under CI load); the API shows
            # the capacity the plane holds, so the window starts once all three hold it
            shown[:] = client.get("/api/v1/testbed", headers=op).json()["backends"]
            return all(b["egress_capacity_bps"] == pytest.approx(b["offered_bps"] / FACTOR) for b in shown)

        try:
            wait_until("every plane's egress capacity lowered to offered / factor", capacity_applied, APPLY_S)
        except AssertionError as exc:
            raise AssertionError(f"{exc}: {shown}") from None
        started = datetime.now(UTC)
        assert all(b["congestion_mechanism"] for b in shown), shown

        time.sleep(SETTLE_S + WINDOW_S)
        window = {
            d: loss(i, started + timedelta(seconds=SETTLE_S), started + timedelta(seconds=SETTLE_S + WINDOW_S))
            for d, i in ids.items()
        }
        print(f"red-embb loss % per lane during congestion at factor {FACTOR}: {window}")  # the figures, with -s
        for driver, lanes in window.items():
            assert set(lanes) == {0, 2, 4, 6}, (driver, window)
            assert lanes[0] >= 30, f"{driver}: the best-effort lane should lose first: {window}"
            assert lanes[6] <= 2, f"{driver}: the highest lane should keep its traffic: {window}"
            # never a lower lane ahead (within the 2 points lane 6 is allowed; two lanes that
            # both starve lose about the same: CI saw lanes 0 / 2 at 88.6 / 88.7 % on NetFPGA)
            assert lanes[0] + 2 >= lanes[2] or lanes[2] > 95, (driver, window)

        try:
            wait_until("every lane of red-embb recovered on all three planes after the scenario", all_lanes_clean, 45)
        except AssertionError as exc:
            raise AssertionError(f"{exc}; loss % per plane and lane: {seen}") from None
