"""Queueing delay of one interval from two reads of a data plane's log2 delay histogram.

A data plane counts each dequeued packet's sojourn in bucket ``i`` = [2**i, 2**(i+1)) units
(bucket 0 also holds 0; the last bucket everything above), plus the count, the sum and the
largest sojourn since it started (``drivers.contract.DelayHistogram``). The difference of two
reads is the interval's histogram: its mean is exact (sum / count), its percentiles are
interpolated linearly inside the bucket the rank falls in (the k-th of its n sojourns at the
middle of its 1/n share).

Error bound: the true percentile lies in the same bucket as the estimate, so the estimate is
off by less than that bucket's width — less than 2**i units for bucket i, i.e. within a
factor of 2 of the true value (never more than one unit off in bucket 0). The estimate is
also capped by the largest sojourn the data plane ever saw, which bounds the open last bucket.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from sliceportal.drivers.contract import DelayHistogram


@dataclass(frozen=True)
class DelayDelta:
    """One interval's histogram: counts per bucket, in ``unit_ns``."""

    unit_ns: int
    count: int
    sum: int
    buckets: tuple[int, ...]
    max_ever: int  # the largest sojourn since the data plane started (bounds the last bucket)


@dataclass(frozen=True)
class DelayStats:
    mean_ms: float
    p50_ms: float
    p99_ms: float


def delay_delta(now: DelayHistogram, before: DelayHistogram | None) -> DelayDelta | None:
    """The interval's histogram, or None when the two reads do not subtract (another unit,
    a bucket or the count going backwards: a restarted data plane — no interval to report)."""
    if before is None:
        before = DelayHistogram(unit_ns=now.unit_ns)
    if before.unit_ns != now.unit_ns or now.count < before.count or now.sum < before.sum:
        return None
    buckets = tuple(a - b for a, b in zip(now.buckets, before.buckets, strict=True))
    if any(b < 0 for b in buckets):
        return None
    return DelayDelta(now.unit_ns, now.count - before.count, now.sum - before.sum, buckets, now.max)


def bucket_bounds(i: int) -> tuple[int, int]:
    """[low, high) of bucket ``i`` in units."""
    return (0 if i == 0 else 1 << i), 1 << (i + 1)


def percentile(d: DelayDelta, q: float) -> float | None:
    """The ``q`` quantile (0 < q <= 1) of the interval's sojourns, in units; None without packets."""
    total = sum(d.buckets)
    if total == 0:
        return None
    rank = q * total
    seen = 0
    last = max(i for i, n in enumerate(d.buckets) if n)
    for i, n in enumerate(d.buckets):
        if n == 0:
            continue
        if seen + n >= rank or i == last:
            low, high = bucket_bounds(i)
            if i == len(d.buckets) - 1:
                high = max(high, d.max_ever)  # the open last bucket reaches up to the largest seen
            # the k-th of the bucket's n sojourns sits at the middle of its 1/n share of the
            # bucket, so the estimate stays inside the half-open [low, high)
            k = min(max(math.ceil(rank - seen), 1), n)
            estimate = low + (high - low) * (k - 0.5) / n
            # no sojourn exceeded the largest ever seen (when the plane reports it)
            return min(estimate, float(d.max_ever)) if d.max_ever >= low else estimate
        seen += n
    return None  # pragma: no cover - the loop returns at the last non-empty bucket


def delay_stats(d: DelayDelta | None) -> DelayStats | None:
    """Mean, p50 and p99 in milliseconds; None when nothing was dequeued in the interval."""
    if d is None or d.count <= 0 or sum(d.buckets) == 0:
        return None
    ms = d.unit_ns / 1e6
    p50, p99 = percentile(d, 0.5), percentile(d, 0.99)
    assert p50 is not None and p99 is not None
    return DelayStats(mean_ms=d.sum / d.count * ms, p50_ms=p50 * ms, p99_ms=p99 * ms)
