"""Posting probe samples to the portal's ingest API (``POST /api/v1/kpis/ingest``).

A thread of its own, so a slow portal never delays a probe. Transport errors, 5xx and 429
are retried with backoff (tenacity; a 429's ``Retry-After`` is honoured); a refused batch
(4xx: a wrong slice id, a key without the ``telemetry`` scope) is not retried and is logged
with the portal's field errors. What cannot be posted is dropped, counted in ``failed``:
measuring goes on, and a backlog is bounded (``MAX_QUEUED`` batches).
"""

from __future__ import annotations

import logging
import queue
import threading
from typing import Any

import httpx
from tenacity import RetryCallState, Retrying, retry_if_exception, stop_after_attempt, wait_exponential

from sliceportal.probe.sender import LaneSample

log = logging.getLogger(__name__)
INGEST_PATH = "/api/v1/kpis/ingest"
MAX_QUEUED = 600  # batches (intervals): ten minutes of a 1 s interval
ATTEMPTS = 5


class Refused(Exception):
    """The portal refused the batch (4xx other than 429): retrying would not help."""


class _Retryable(Exception):
    def __init__(self, message: str, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


def _wait(state: RetryCallState) -> float:
    exc = state.outcome.exception() if state.outcome else None
    backoff = wait_exponential(multiplier=0.5, max=10)(state)
    if isinstance(exc, _Retryable) and exc.retry_after is not None:
        return max(backoff, min(exc.retry_after, 60.0))
    return backoff


class Poster:
    """Posts each interval's samples as one batch; ``close()`` flushes what is queued."""

    def __init__(
        self, client: httpx.Client, api_key: str, slice_id: int, backend_id: int, *, attempts: int = ATTEMPTS
    ) -> None:
        self.client, self.api_key = client, api_key
        self.slice_id, self.backend_id = slice_id, backend_id
        self.attempts = attempts
        self.posted = 0  # points stored
        self.failed = 0  # points dropped
        self._queue: queue.Queue[list[LaneSample] | None] = queue.Queue(MAX_QUEUED)
        self._thread = threading.Thread(target=self._work, name="probe-poster", daemon=True)
        self._thread.start()

    def __call__(self, samples: list[LaneSample]) -> None:
        try:
            self._queue.put_nowait(samples)
        except queue.Full:
            self.failed += len(samples)
            log.warning("portal backlog full: %d probe samples dropped", len(samples))

    def close(self, timeout_s: float = 30.0) -> None:
        self._queue.put(None)
        self._thread.join(timeout_s)

    def _work(self) -> None:
        while (samples := self._queue.get()) is not None:
            points = [s.point(self.slice_id, self.backend_id) for s in samples]
            try:
                self._post(points)
                self.posted += len(points)
            except Exception as exc:  # a probe agent keeps measuring whatever the portal does
                self.failed += len(points)
                log.error("probe samples not stored (%d points): %s", len(points), exc)

    def _post(self, points: list[dict[str, Any]]) -> None:
        for attempt in Retrying(
            stop=stop_after_attempt(self.attempts),
            wait=_wait,
            reraise=True,
            retry=retry_if_exception(lambda e: isinstance(e, _Retryable | httpx.TransportError)),
        ):
            with attempt:
                r = self.client.post(INGEST_PATH, json={"points": points}, headers={"X-API-Key": self.api_key})
                if r.status_code == 429 or r.status_code >= 500:
                    after = r.headers.get("Retry-After", "")
                    raise _Retryable(f"{r.status_code}: {r.text[:200]}", float(after) if after.isdigit() else None)
                if r.status_code >= 400:
                    raise Refused(f"{r.status_code}: {r.text[:1000]}")
