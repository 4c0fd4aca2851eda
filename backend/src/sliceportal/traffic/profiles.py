"""Rate and congestion profiles: when each flow sends, as (flow index, time offset ns).

A profile is pure: it yields a schedule for ``n`` flows until a duration or a packet
budget runs out. The pcap writer stamps these times; the live sender paces by its own
token bucket instead (it cannot trust a precomputed schedule to the wall clock).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field

NS = 1_000_000_000


class ProfileError(ValueError):
    """A profile with rates or sizes that cannot produce a schedule."""


@dataclass(frozen=True, slots=True)
class ConstantRate:
    """All flows in round robin at ``pps`` packets/s in total (each flow gets pps / n)."""

    pps: float

    def schedule(self, n_flows: int) -> Iterator[tuple[int, int]]:
        _check_rate(self.pps)
        i = 0
        while True:
            yield i % n_flows, int(i * NS / self.pps)
            i += 1


@dataclass(frozen=True, slots=True)
class Bursts:
    """Round robin in bursts of ``burst`` packets at ``peak_pps``, ``pps`` on average.

    Bursts above what a data plane drains build its queues: the congestion profile.
    """

    pps: float
    burst: int
    peak_pps: float

    def schedule(self, n_flows: int) -> Iterator[tuple[int, int]]:
        _check_rate(self.pps)
        _check_rate(self.peak_pps)
        if self.burst < 1 or self.peak_pps < self.pps:
            raise ProfileError("bursts need burst >= 1 and peak_pps >= pps")
        i = 0
        while True:
            b, k = divmod(i, self.burst)
            yield i % n_flows, int(b * self.burst * NS / self.pps + k * NS / self.peak_pps)
            i += 1


@dataclass(frozen=True, slots=True)
class PerFlowRates:
    """Each flow at its own rate: ``rates[flow index]`` pps, ``default_pps`` for the rest.

    Used for per-service congestion (e.g. best-effort services above the lane's capacity).
    Flows are phase-shifted so that equal rates interleave rather than coincide.
    """

    rates: Mapping[int, float] = field(default_factory=dict)
    default_pps: float = 0.0

    def schedule(self, n_flows: int) -> Iterator[tuple[int, int]]:
        periods: list[float] = []
        for i in range(n_flows):
            rate = self.rates.get(i, self.default_pps)
            if rate < 0:
                raise ProfileError(f"flow {i}: rate {rate} < 0")
            periods.append(NS / rate if rate > 0 else 0.0)
        if not any(periods):
            raise ProfileError("every flow has rate 0")
        heap = [(p * i / n_flows, i, 0) for i, p in enumerate(periods) if p]
        heapq.heapify(heap)
        while True:
            t, i, k = heapq.heappop(heap)
            yield i, int(t)
            heapq.heappush(heap, (periods[i] * (i / n_flows + k + 1), i, k + 1))


Profile = ConstantRate | Bursts | PerFlowRates


def per_service_rates(
    services: Sequence[int], rate_of_service: Mapping[int, float], default_pps: float
) -> PerFlowRates:
    """A ``PerFlowRates`` from a rate per service index (``services[i]`` is flow i's service)."""
    return PerFlowRates({i: rate_of_service.get(s, default_pps) for i, s in enumerate(services)}, default_pps)


def _check_rate(pps: float) -> None:
    if not pps > 0:
        raise ProfileError(f"rate must be > 0 packets/s, got {pps}")
