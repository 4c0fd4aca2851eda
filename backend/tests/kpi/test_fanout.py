"""KPI fan-out across API processes through PostgreSQL LISTEN/NOTIFY (issue #16).

Two portal processes on one database: A is a second uvicorn process, B the app under test in
this process. A dashboard stream opened on A receives what B's process ingests and what a
plain ``ingest()`` on a third connection (the controller's collector) stores — in order, each
point once, a tenant only its own slices' points — and nothing of a rolled-back ingest. A
listener whose connection is killed reconnects and receives later points.
"""

from __future__ import annotations

import json
import queue
import threading
import time
from datetime import UTC, datetime, timedelta

import httpx
import pytest
from fastapi.testclient import TestClient
from sqlalchemy import text
from sqlalchemy.orm import Session

from sliceportal.kpi.notify import CHANNEL, MAX_PAYLOAD, KpiListener, _Batches, decode, encode, notify
from sliceportal.kpi.points import KpiPoint
from sliceportal.kpi.store import ingest, store
from tests.factories import login, wait_until

T0 = datetime(2026, 11, 23, 12, 0, tzinfo=UTC)


def points(ids: dict[str, int], names: tuple[str, ...], seconds: range, lanes: range = range(2)) -> list[KpiPoint]:
    return [
        KpiPoint(
            slice_id=ids[n],
            backend_id=ids["backend"],
            lane=lane,
            source="testbed",
            ts=T0 + timedelta(seconds=s),
            tx_packets=1000 + s,
            rx_packets=1000 + s,
            throughput_bps=8e6,
            drops={"meter": s},
        )
        for s in seconds
        for n in names
        for lane in lanes
    ]


def key(p: KpiPoint | dict[str, object]) -> tuple[object, ...]:
    d = p.model_dump(mode="json") if isinstance(p, KpiPoint) else p
    return d["slice_id"], d["lane"], d["ts"], d["tx_packets"], json.dumps(d["drops"], sort_keys=True)


class Stream:
    """A live KPI stream held open on a worker over HTTP; each ``kpi`` event's points, as they come."""

    def __init__(self, base: str, headers: dict[str, str]) -> None:
        self.events: queue.Queue[list[dict[str, object]]] = queue.Queue()
        self._open = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._read, args=(base, headers), daemon=True)
        self._thread.start()
        assert self._open.wait(30), "the stream did not open"

    def _read(self, base: str, headers: dict[str, str]) -> None:
        with (
            httpx.Client(base_url=base, timeout=httpx.Timeout(5, read=60)) as c,
            c.stream("GET", "/api/v1/kpis/stream", headers=headers) as r,
        ):
            r.raise_for_status()
            for line in r.iter_lines():
                self._open.set()  # "retry:" comes once the stream is subscribed to the hub
                if line.startswith("data: "):
                    self.events.put(json.loads(line[len("data: ") :]))
                if self._stop.is_set():
                    return

    def take(self, n_points: int, timeout_s: float = 30) -> list[dict[str, object]]:
        """The next events' points until ``n_points`` arrived (fails on fewer)."""
        got: list[dict[str, object]] = []
        deadline = time.monotonic() + timeout_s
        while len(got) < n_points:
            got += self.events.get(timeout=max(0.01, deadline - time.monotonic()))
        return got

    def close(self) -> None:
        self._stop.set()


def test_encode_chunks_below_the_notify_limit_and_decodes_to_the_same_points() -> None:
    ids = {"red": 1, "blue": 2, "backend": 3}
    batch = points(ids, ("red", "blue"), range(40), range(8))  # 640 points: ~100 kB of rows
    payloads = encode(batch, {1: 10, 2: 20})
    assert len(payloads) > 5 and all(len(p.encode()) <= MAX_PAYLOAD for p in payloads)
    body = "".join(p.split(":", 3)[3] for p in payloads)
    decoded, tenant_of = decode(body)
    assert [json.loads(p.as_json()) for p in decoded] == [p.model_dump(mode="json") for p in batch]
    assert decoded == batch and tenant_of == {1: 10, 2: 20}  # a point's cached JSON is not part of it


def test_a_broken_batch_is_dropped_and_the_next_one_delivered() -> None:
    ids = {"red": 1, "blue": 2, "backend": 3}
    first, second = (encode(points(ids, ("red",), range(n, n + 30), range(8)), {1: 10}) for n in (0, 30))
    batches = _Batches()
    assert [batches.add(p) for p in first[:-1]] == [None] * (len(first) - 1)  # its last chunk never comes
    assert batches.add(second[1]) is None  # out of sequence: dropped, not glued to the first
    assert all(batches.add(p) is None for p in second[:-1])
    body = batches.add(second[-1])
    assert body is not None and decode(body)[0] == points(ids, ("red",), range(30, 60), range(8))


@pytest.mark.timeout(240)
def test_stream_on_one_worker_receives_points_ingested_by_others(
    client: TestClient, session: Session, worker_a: str, tenants: dict[str, int], db_url: str
) -> None:
    # tokens from B: the workers share the secret, as replicas do
    op_a, red_a = login(client, "op"), login(client, "red-view")
    everything, red_only = Stream(worker_a, op_a), Stream(worker_a, red_a)
    try:
        # rolled back after its NOTIFY was queued: nothing may reach any stream
        store(session, points(tenants, ("red",), range(900, 901)), None)
        notify(session, points(tenants, ("red",), range(900, 901)), {tenants["red"]: 1})
        session.rollback()
        # B's process (its own sessions, as its collector would), a third connection, then a batch
        # far above one NOTIFY's 8000 bytes, through B again
        first = points(tenants, ("red", "blue"), range(0, 2))
        with client.app.state.sessionmaker() as b_session:  # type: ignore[attr-defined]
            ingest(b_session, first)
        second = points(tenants, ("blue", "red"), range(2, 3))
        ingest(session, second)
        third = points(tenants, ("red", "blue"), range(3, 33), range(4))  # 240 points, ~40 kB
        with client.app.state.sessionmaker() as b_session:  # type: ignore[attr-defined]
            ingest(b_session, third)

        sent = first + second + third
        got = everything.take(len(sent))
        assert [key(p) for p in got] == [key(p) for p in sent]  # in order, each once, nothing rolled back
        red_sent = [p for p in sent if p.slice_id == tenants["red"]]
        red_got = red_only.take(len(red_sent))
        assert [key(p) for p in red_got] == [key(p) for p in red_sent]  # the other tenant's never
        time.sleep(1.0)  # nothing more is on its way: no duplicates, no late rolled-back points
        assert everything.events.empty() and red_only.events.empty()
        # B heard its own and the third connection's batches through PostgreSQL too
        assert client.app.state.kpi_listener.batches == 3  # type: ignore[attr-defined]
    finally:
        everything.close()
        red_only.close()


@pytest.mark.timeout(240)
def test_listener_reconnects_after_its_connection_is_terminated(
    client: TestClient, session: Session, worker_a: str, tenants: dict[str, int]
) -> None:
    op = login(client, "op")
    stream = Stream(worker_a, op)
    listener_b: KpiListener = client.app.state.kpi_listener  # type: ignore[attr-defined]
    try:
        ingest(session, points(tenants, ("red",), range(0, 1)))
        assert [key(p) for p in stream.take(2)] == [key(p) for p in points(tenants, ("red",), range(0, 1))]
        killed = (
            session.execute(
                text(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE datname = current_database() "
                    "AND query = :listen"
                ),
                {"listen": f"LISTEN {CHANNEL}"},
            )
            .scalars()
            .all()
        )
        assert len(killed) == 2 and all(killed)  # worker A's and B's listener connections
        wait_until("B's listener reconnected", lambda: listener_b.connects == 2 and listener_b.listening.is_set())
        assert len(listener_b.gaps) == 1  # the gap is logged and kept, not silent
        # A reconnects on its own schedule: ingest until its stream hears the channel again
        second = 1
        deadline = time.monotonic() + 30
        while True:
            ingest(session, points(tenants, ("blue",), range(second, second + 1)))
            try:
                got = stream.take(2, timeout_s=0.5)
                break
            except queue.Empty:
                assert time.monotonic() < deadline, "worker A's listener did not come back"
                second += 1
        heard = [key(p) for p in got]
        time.sleep(1.0)  # batches of the loop still on their way
        while not stream.events.empty():
            heard += [key(p) for p in stream.events.get()]
        tried = [key(p) for p in points(tenants, ("blue",), range(1, second + 1))]
        # what A heard after its reconnect: points of the loop, each once, in order
        assert len(set(heard)) == len(heard) and heard == tried[tried.index(heard[0]) :][: len(heard)]
        later = points(tenants, ("red", "blue"), range(100, 103))
        ingest(session, later)
        assert [key(p) for p in stream.take(len(later))] == [key(p) for p in later]
    finally:
        stream.close()
