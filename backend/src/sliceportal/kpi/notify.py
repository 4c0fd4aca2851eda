"""KPI fan-out across processes: PostgreSQL NOTIFY on ingest, one LISTEN connection per API process.

``notify`` queues the stored points on the channel inside the ingest's own transaction, so
PostgreSQL delivers them on commit only (a rolled-back ingest publishes nothing) and in
commit order. ``KpiListener`` holds a dedicated connection that LISTENs, decodes each batch
and hands it to the process's ``KpiHub``, which applies the per-tenant filter for every
open stream. So a stream on any worker sees the points ingested by any process.

Payload: the batch itself, chunked. A NOTIFY payload must stay under 8000 bytes, and one
interval of the testbed is ~100 points (~15 kB as compact rows). Chunks rather than a
reference (a batch id that listeners read back from ``kpi_sample``) because a reference
costs every worker a query per interval, races with retention and with an interval
re-stored under the same key, and the listener would need a database session; chunks cost
nothing but the queue (8 GB by default; a batch is read within milliseconds). One
transaction's notifications are queued together and delivered contiguously in order, so a
listener reassembles a batch from ``<batch>:<index>:<count>:`` headers without interleaving.
"""

from __future__ import annotations

import json
import logging
import uuid
from collections.abc import Sequence
from datetime import UTC, datetime

import psycopg
from pydantic import TypeAdapter
from sqlalchemy import text
from sqlalchemy.orm import Session

from sliceportal.core.listen import ChannelListener
from sliceportal.kpi.hub import KpiHub
from sliceportal.kpi.points import KpiPoint

log = logging.getLogger(__name__)

CHANNEL = "sliceportal_kpi"
MAX_PAYLOAD = 7900  # bytes per NOTIFY (the server's limit is 8000, header included)


_POINTS = TypeAdapter(list[KpiPoint])


def encode(points: Sequence[KpiPoint], tenant_of: dict[int, int], points_json: str | None = None) -> list[str]:
    """The NOTIFY payloads of one batch: the points as JSON objects (``points_json`` when the
    caller encoded them already, else by pydantic's Rust core: a Python-side row per point
    cost ~40 µs, half a 10 000-point ingest) with the tenant of each slice, chunked."""
    body = points_json if points_json is not None else _POINTS.dump_json(list(points)).decode()
    if not body.isascii():  # a chunk is cut by characters and must stay under MAX_PAYLOAD bytes
        body = json.dumps(json.loads(body), separators=(",", ":"))  # ensure_ascii: one byte per character
    full = f'{{"tenants":{json.dumps({str(s): t for s, t in tenant_of.items()})},"points":{body}}}'
    batch = uuid.uuid4().hex[:12]
    size = MAX_PAYLOAD - 32  # room for the header
    pieces = [full[i : i + size] for i in range(0, len(full), size)]
    return [f"{batch}:{i}:{len(pieces)}:{piece}" for i, piece in enumerate(pieces)]


def decode(body: str) -> tuple[list[KpiPoint], dict[int, int]]:
    data = json.loads(body)
    return _POINTS.validate_python(data["points"]), {int(s): t for s, t in data["tenants"].items()}


def notify(
    session: Session, points: Sequence[KpiPoint], tenant_of: dict[int, int], points_json: str | None = None
) -> None:
    """Queue ``points`` on the channel in ``session``'s transaction: sent when it commits.
    Every chunk of the batch in one statement (one round trip, whatever the batch's size),
    queued in the array's order."""
    # the chunks travel as one JSON array: a text[] parameter costs a Python-side escape per element
    session.execute(
        text("SELECT pg_notify(:channel, payload) FROM json_array_elements_text(CAST(:payloads AS json)) AS payload"),
        {"channel": CHANNEL, "payloads": json.dumps(encode(points, tenant_of, points_json))},
    )


class _Batches:
    """Reassembles one connection's chunked batches (contiguous per transaction)."""

    def __init__(self) -> None:
        self._batch: str | None = None
        self._pieces: list[str] = []

    def add(self, payload: str) -> str | None:
        """The whole batch once its last chunk arrived, else None."""
        batch, index, count, piece = payload.split(":", 3)
        if int(index) == 0:
            if self._batch is not None:
                log.warning("KPI batch %s incomplete (%d chunks); dropped", self._batch, len(self._pieces))
            self._batch, self._pieces = batch, []
        elif batch != self._batch or int(index) != len(self._pieces):
            log.warning("KPI batch %s chunk %s out of sequence; dropped", batch, index)
            self._batch, self._pieces = None, []
            return None
        self._pieces.append(piece)
        if len(self._pieces) < int(count):
            return None
        body = "".join(self._pieces)
        self._batch, self._pieces = None, []
        return body


RECONNECT_FIRST_S, RECONNECT_MAX_S = 0.1, 5.0
STABLE_S = 30.0  # a connection that listened this long and broke is a new outage: backoff anew


class KpiListener(ChannelListener):
    """Feeds ``hub`` with every batch notified on the channel, from a thread with its own connection.

    The connection is re-established with exponential backoff when it breaks (core/listen.py).
    What was notified while it was down is not re-sent by PostgreSQL: each such gap is logged
    and kept in ``gaps`` — streams lose those points live, and the dashboards' history queries
    (re-read on reconnect and polled) hold them, since the points are in ``kpi_sample`` before
    any NOTIFY is delivered.
    """

    thread_name = "kpi-listener"

    def __init__(self, database_url: str, hub: KpiHub, *, poll_s: float = 0.1, stable_s: float = STABLE_S) -> None:
        super().__init__(
            database_url, CHANNEL, first_wait_s=RECONNECT_FIRST_S, max_wait_s=RECONNECT_MAX_S, stable_s=stable_s
        )
        self.hub = hub
        # how often a quiet connection checks for stop(): an app's shutdown (every test's) waits for it
        self._poll_s = poll_s
        self.gaps: list[tuple[datetime, datetime]] = []  # (lost, listening again), UTC
        self.batches = 0
        self._lost: datetime | None = None
        self.backend_pid: int | None = None  # the server process of the current connection

    def lost(self, exc: BaseException | None, attempt: int, wait_s: float) -> None:
        if self._lost is None:
            self._lost = datetime.now(UTC)
        log.warning("KPI listener lost its connection (%s); reconnecting, attempt %d", exc, attempt)

    def listened(self, conn: psycopg.Connection) -> None:
        self.backend_pid = conn.info.backend_pid
        if self._lost is not None:
            gap = (self._lost, datetime.now(UTC))
            self.gaps.append(gap)
            self._lost = None
            log.warning(
                "KPI listener listening again: points committed between %s and %s were not streamed "
                "by this process (%.1f s); they are stored, dashboards re-read them",
                gap[0].isoformat(),
                gap[1].isoformat(),
                (gap[1] - gap[0]).total_seconds(),
            )

    def serve(self, conn: psycopg.Connection) -> None:
        batches = _Batches()
        while not self.stopping:
            for n in conn.notifies(timeout=self._poll_s):
                self._deliver(batches, n.payload)
                if self.stopping:
                    break

    def _deliver(self, batches: _Batches, payload: str) -> None:
        try:
            body = batches.add(payload)
            if body is None:
                return
            points, tenant_of = decode(body)
        except (ValueError, KeyError, TypeError):
            log.exception("KPI notification not understood; skipped")
            return
        self.batches += 1
        self.hub.publish(points, tenant_of)


def start_listener(database_url: str, hub: KpiHub, wait_s: float = 3.0) -> KpiListener:
    """A started listener, LISTENing already unless the database is unreachable for ``wait_s``
    (it keeps trying in the background): a process serves streams once it hears the channel."""
    listener = KpiListener(database_url, hub)
    listener.start()
    listener.listening.wait(wait_s)
    return listener
