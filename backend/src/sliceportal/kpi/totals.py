"""Running totals per (slice, backend, lane, source) of the KPI points this process received.

Every API process receives every stored point through the live stream (``kpi.notify``), so
each can export Prometheus counters (``*_packets_total``, ``*_bytes_total``) without reading
the sample table on each scrape: monotonic since the process started, as Prometheus expects
of a counter (``rate()`` handles a restart's reset).
"""

from __future__ import annotations

import threading
from collections.abc import Iterable

from sliceportal.kpi.points import KpiPoint

Key = tuple[int, int, int, str]  # slice id, backend id, catalogue lane, source
FIELDS = ("tx_packets", "rx_packets", "tx_bytes", "rx_bytes", "dropped", "ecn_marks")


class LaneTotals:
    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._totals: dict[Key, list[int]] = {}

    def add(self, points: Iterable[KpiPoint]) -> None:
        with self._lock:
            for p in points:
                t = self._totals.setdefault((p.slice_id, p.backend_id, p.lane, p.source), [0] * len(FIELDS))
                t[0] += p.tx_packets
                t[1] += p.rx_packets
                t[2] += p.tx_bytes
                t[3] += p.rx_bytes
                t[4] += sum(p.drops.values())
                t[5] += p.ecn_marks

    def snapshot(self) -> dict[Key, dict[str, int]]:
        with self._lock:
            return {k: dict(zip(FIELDS, v, strict=True)) for k, v in self._totals.items()}
