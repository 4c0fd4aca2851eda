"""Per-principal rate limits on the expensive endpoints (rule preview, deploy, rollback,
reconcile, CSV import): 429 with Retry-After once a principal exceeds its budget.

Counted per authenticated user (not per address: many users share a NAT, and one user from
many addresses is still one user), in a moving window held by the ``limits`` library. The
counters live in the process: with several portal workers each enforces the limit on its own.
"""

from __future__ import annotations

import math
import re
import time

from fastapi import Request
from fastapi.concurrency import run_in_threadpool
from fastapi.security.utils import get_authorization_scheme_param
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from sliceportal.api.deps import _authenticate as authenticate
from sliceportal.api.deps import get_secret
from sliceportal.api.errors import ApiError
from sliceportal.core.config import Settings

# (method, path pattern) -> the budget's name: one budget per user and kind, across backends
EXPENSIVE = [
    ("GET", re.compile(r"^/api/v1/backends/[^/]+/preview$"), "preview"),
    ("POST", re.compile(r"^/api/v1/backends/[^/]+/(deployments|rollback|reconcile)$"), "deploy"),
    ("POST", re.compile(r"^/api/v1/intents$"), "deploy"),
    ("POST", re.compile(r"^/api/v1/subscribers/import$"), "import"),
]


def budget_of(method: str, path: str) -> str | None:
    return next((name for m, pattern, name in EXPENSIVE if m == method and pattern.match(path)), None)


class ExpensiveLimiter:
    def __init__(self, settings: Settings) -> None:
        self.item: RateLimitItem = parse(settings.rate_limit_expensive)
        self.limiter = MovingWindowRateLimiter(MemoryStorage())

    def hit(self, principal_key: str, endpoint: str) -> int | None:
        """None if allowed; otherwise the seconds until the next call is."""
        if self.limiter.hit(self.item, principal_key, endpoint):
            return None
        stats = self.limiter.get_window_stats(self.item, principal_key, endpoint)
        return max(1, math.ceil(stats.reset_time - time.time()))


async def limit_expensive(request: Request) -> None:
    """Router-wide dependency; it reads its credentials from the request itself so that it
    adds no parameters to every operation in the OpenAPI. ``async``: the other requests (all
    but a few) leave at once, without a hop through the thread pool."""
    budget = budget_of(request.method, request.url.path.rstrip("/"))
    if budget is None:
        return
    await run_in_threadpool(_hit, request, budget)


def _hit(request: Request, budget: str) -> None:
    limiter: ExpensiveLimiter = request.app.state.expensive_limiter
    scheme, token = get_authorization_scheme_param(request.headers.get("authorization"))
    with request.app.state.sessionmaker() as session:
        principal = authenticate(
            session,
            get_secret(request),
            token if scheme.lower() == "bearer" else None,
            request.headers.get("x-api-key"),
        )
    wait = limiter.hit(f"user:{principal.user_id}", budget)
    if wait is not None:
        raise ApiError(
            429,
            "Too many requests",
            f"at most {limiter.item} {budget} requests per user; try again in {wait} s",
            headers={"Retry-After": str(wait)},
        )
