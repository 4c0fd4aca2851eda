"""Per-principal rate limits on the expensive endpoints (rule preview, deploy, rollback, intents,
reconcile, CSV import): 429 with Retry-After once a principal exceeds its budget.

Counted per authenticated user (not per address: many users share a NAT, and one user from
many addresses is still one user), in a moving window held by the ``limits`` library. The
counters live in the process: with several portal workers each enforces the limit on its own.
"""

from __future__ import annotations

import math
import time
from typing import Any

from fastapi import Depends, Request
from limits import RateLimitItem, parse
from limits.storage import MemoryStorage
from limits.strategies import MovingWindowRateLimiter

from sliceportal.api.deps import CurrentUser
from sliceportal.api.errors import ApiError
from sliceportal.core.config import Settings


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


def expensive(budget: str) -> Any:
    """A route's dependency: one call of the user's ``budget`` (one budget per user and kind,
    across backends), counted before the route's own work and refused with 429 beyond it.
    The principal is the request's own (FastAPI resolves it once per request), so an
    unauthenticated call is refused with 401 and not counted."""

    async def limit(request: Request, principal: CurrentUser) -> None:  # no I/O: no thread-pool hop
        limiter: ExpensiveLimiter = request.app.state.expensive_limiter
        wait = limiter.hit(f"user:{principal.user_id}", budget)
        if wait is not None:
            raise ApiError(
                429,
                "Too many requests",
                f"at most {limiter.item} {budget} requests per user; try again in {wait} s",
                headers={"Retry-After": str(wait)},
            )

    return Depends(limit)


PREVIEW = expensive("preview")
DEPLOY = expensive("deploy")
IMPORT = expensive("import")
