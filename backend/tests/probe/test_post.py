"""The poster's retry policy against a portal that answers 503, 429 or 422 (httpx's mock
transport stands in for the HTTP peer; the real ingest API is in test_loopback.py)."""

from __future__ import annotations

from datetime import UTC, datetime

import httpx

from sliceportal.probe.post import INGEST_PATH, Poster
from sliceportal.probe.sender import summarise

SAMPLE = summarise(0, datetime(2026, 11, 27, tzinfo=UTC), 1.0, tx=2, delays_in_send_order=[1.0, 2.0], size=44)


def _poster(answers: list[httpx.Response], seen: list[httpx.Request]) -> Poster:
    def handle(request: httpx.Request) -> httpx.Response:
        seen.append(request)
        return answers.pop(0)

    client = httpx.Client(base_url="http://portal.test", transport=httpx.MockTransport(handle))
    return Poster(client, "sp_key", slice_id=3, backend_id=4, attempts=3)


def test_transient_failures_are_retried_and_the_batch_stored_once() -> None:
    seen: list[httpx.Request] = []
    poster = _poster([httpx.Response(503), httpx.Response(201, json={"stored": 1, "violations_changed": 0})], seen)
    poster([SAMPLE])
    poster.close()
    assert (poster.posted, poster.failed) == (1, 0)
    assert [r.url.path for r in seen] == [INGEST_PATH] * 2
    assert seen[0].headers["X-API-Key"] == "sp_key"
    body = httpx.Response(200, content=seen[0].content).json()
    assert body["points"][0] | {"ts": None} == SAMPLE.point(3, 4) | {"ts": None}


def test_a_refused_batch_is_not_retried() -> None:
    seen: list[httpx.Request] = []
    poster = _poster([httpx.Response(422, json={"errors": [{"field": "points.0.slice_id"}]})], seen)
    poster([SAMPLE])
    poster.close()
    assert (poster.posted, poster.failed, len(seen)) == (0, 1, 1)


def test_giving_up_after_the_attempts_counts_the_points_failed() -> None:
    seen: list[httpx.Request] = []
    poster = _poster([httpx.Response(429, headers={"Retry-After": "0"})] * 3, seen)
    poster([SAMPLE, SAMPLE])
    poster.close()
    assert (poster.posted, poster.failed, len(seen)) == (0, 2, 3)
