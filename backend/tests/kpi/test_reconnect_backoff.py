"""The LISTEN connections' backoff starts anew for each outage (issue #31): the KPI listener's
and the footprint refresher's count of failures used to run over the thread's life, so a blip
after a few earlier ones waited the maximum before listening again."""

from __future__ import annotations

import time
from collections.abc import Callable

from sqlalchemy import text
from sqlalchemy.orm import Session, sessionmaker

from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.notify import CHANNEL as KPI_CHANNEL
from sliceportal.kpi.notify import KpiListener
from sliceportal.services.footprint_push import CHANNEL as FOOTPRINT_CHANNEL
from sliceportal.services.footprint_refresher import FootprintRefresher
from tests.factories import wait_until

STABLE_S = 1.0


def _break(session: Session, channel: str) -> None:
    """Terminate the server process of the connection that LISTENs on ``channel``."""
    killed = (
        session.execute(
            text(
                "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                "AND query = :listen"
            ),
            {"listen": f"LISTEN {channel}"},
        )
        .scalars()
        .all()
    )
    session.commit()
    assert killed == [True], killed


def _outages(
    session: Session, channel: str, connects: Callable[[], int], last_wait: Callable[[], float], first: float
) -> None:
    def broken_and_back() -> None:
        before = connects()
        _break(session, channel)
        wait_until("listening again", lambda: connects() > before, 30)

    wait_until("listening", lambda: connects() > 0, 30)
    # connections broken as soon as they listen: the backoff doubles
    waits = []
    for _ in range(4):
        broken_and_back()
        waits.append(last_wait())
    assert waits == [first * 2**i for i in range(4)], waits
    # one that stayed up STABLE_S and broke is a new outage: the first wait again
    up = time.monotonic()
    wait_until(f"up for {STABLE_S} s", lambda: time.monotonic() - up > STABLE_S, 10)
    broken_and_back()
    assert last_wait() == first


def test_the_kpi_listeners_backoff_starts_anew_for_each_outage(db_url: str, session: Session) -> None:
    listener = KpiListener(db_url, KpiHub(), stable_s=STABLE_S)
    listener.start()
    try:
        _outages(session, KPI_CHANNEL, lambda: listener.connects, lambda: listener.last_wait, 0.1)
    finally:
        listener.stop()


def test_the_footprint_refreshers_backoff_starts_anew_for_each_outage(db_url: str, session: Session) -> None:
    refresher = FootprintRefresher(sessionmaker(bind=session.get_bind()), db_url, poll_s=600, stable_s=STABLE_S)
    refresher.start()
    try:
        _outages(session, FOOTPRINT_CHANNEL, lambda: refresher.connects, lambda: refresher.last_wait, 0.5)
    finally:
        refresher.stop()
