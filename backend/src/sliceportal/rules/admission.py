"""Admission control: does a set of slices fit a link (seed 004 §V-B, Eq. 1-4)?

Slices share a bottleneck of capacity C under strict priority. A slice s of priority i is
rate-limited to L (its vQueue's rate) and may queue up to its burst limit, b = L x burst
time, in bytes (here bits). Seed 004 bounds the worst-case queuing delay of priority i by
the busy periods of every slice of priority i or above, each drained at the residual
capacity its own priority sees:

    r_i = C - sum of L over all slices of priority > i            (Eq. 2)
    t_i^s = b_i^s / r_i                                            (Eq. 1)
    d_i = sum over priorities k >= i, slices j of t_k^j           (Eq. 3)

A set is admitted when every slice's d is within its delay bound and the guaranteed
rates fit in C.

The portal's slices may span several lanes (a Flexible Slice uses 0/2/4/6) under one rate
limit and one vQueue. For a slice s seen at its lane p, every slice j with a lane >= p adds
one busy period: its whole burst b_j (the vQueue holds at most that many bits, whichever
lanes they sit in), drained at the residual of the lowest of j's lanes >= p (the slowest
place its bits can wait) with the rate limits of every *other* slice that has a lane above
it taken off (j's own higher lanes share j's rate limit, which b_j already drains). With one
lane per slice this is exactly Eq. 1-3; with several it is a safe upper bound.

``required_capacity`` inverts the bound (the least C for which every slice
meets it) — the figure seed 004 Fig. 15 reads off: 1650 Mbit/s for its Table II slices at
one priority with a 5 ms bound for slice DC (case A), 330 Mbit/s for cases C and D with
each slice's burst limit as its bound.

Pure functions, no I/O: the service layer feeds them the slices on a backend's link and
turns a refusal into the 409 that shows every term.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace


@dataclass(frozen=True)
class SliceDemand:
    name: str
    priority: int  # higher is served first (seed 004 Table III: 7 above 6 above 5)
    rate_limit_bps: float  # L: the slice's vQueue rate
    burst_ms: float  # the vQueue's burst (drop) limit, as time at the rate limit
    delay_bound_ms: float | None = None  # the worst case the slice may see; None: not checked
    guaranteed_bps: float = 0.0
    lanes: tuple[int, ...] = ()  # every lane the slice's traffic uses; () = just ``priority``

    @property
    def burst_bits(self) -> float:
        return self.rate_limit_bps * self.burst_ms / 1e3

    @property
    def lane_set(self) -> tuple[int, ...]:
        return tuple(sorted(set(self.lanes))) if self.lanes else (self.priority,)


@dataclass(frozen=True)
class DelayTerm:
    """One busy period in a slice's worst case: slice ``of`` drained at ``residual_bps``."""

    of: str
    priority: int
    burst_bits: float
    residual_bps: float

    @property
    def ms(self) -> float:
        return float("inf") if self.residual_bps <= 0 else self.burst_bits / self.residual_bps * 1e3


@dataclass(frozen=True)
class SliceVerdict:
    """A slice's worst case at one of its lanes (the lowest lane is its worst)."""

    name: str
    worst_delay_ms: float
    delay_bound_ms: float | None
    terms: tuple[DelayTerm, ...]
    lane: int | None = None

    @property
    def ok(self) -> bool:
        return self.delay_bound_ms is None or self.worst_delay_ms <= self.delay_bound_ms + 1e-9


@dataclass(frozen=True)
class Admission:
    capacity_bps: float
    guaranteed_bps: float  # the sum of the slices' guaranteed rates
    slices: tuple[SliceVerdict, ...] = field(default_factory=tuple)

    @property
    def guarantees_fit(self) -> bool:
        return self.guaranteed_bps <= self.capacity_bps

    @property
    def ok(self) -> bool:
        return self.guarantees_fit and all(v.ok for v in self.slices)

    def refusals(self) -> list[str]:
        """What does not fit, each with its numbers (for the 409's detail and field errors)."""
        out = []
        if not self.guarantees_fit:
            out.append(
                f"guaranteed rates add up to {self.guaranteed_bps / 1e6:g} Mbit/s, "
                f"more than the link's {self.capacity_bps / 1e6:g} Mbit/s"
            )
        for v in self.slices:
            if not v.ok:
                parts = " + ".join(
                    f"{t.burst_bits / 1e6:g} Mbit / {t.residual_bps / 1e6:g} Mbit/s ({t.of})" for t in v.terms
                )
                at = f" at lane {v.lane}" if v.lane is not None else ""
                out.append(
                    f"slice {v.name}{at}: worst-case delay {v.worst_delay_ms:.2f} ms = {parts} "
                    f"exceeds its bound of {v.delay_bound_ms:g} ms"
                )
        return out


def residual_bps(slices: Sequence[SliceDemand], capacity_bps: float, priority: int) -> float:
    """Eq. 2: what the link leaves to ``priority`` after every higher priority's rate limit."""
    return capacity_bps - sum(s.rate_limit_bps for s in slices if s.priority > priority)


def lane_terms(slices: Sequence[SliceDemand], capacity_bps: float, lane: int) -> tuple[DelayTerm, ...]:
    """Eq. 1 and 2 for traffic waiting in ``lane``: one busy period per slice with a lane >= it."""
    terms = []
    for j in sorted(slices, key=lambda x: (-max(x.lane_set), x.name)):
        above = [k for k in j.lane_set if k >= lane]
        if not above:
            continue
        k = min(above)  # j's bits drain no faster than at the lowest of its lanes that can hold them up
        residual = capacity_bps - sum(i.rate_limit_bps for i in slices if i is not j and max(i.lane_set) > k)
        terms.append(DelayTerm(j.name, k, j.burst_bits, residual))
    return tuple(terms)


def worst_case(slices: Sequence[SliceDemand], capacity_bps: float) -> tuple[SliceVerdict, ...]:
    """Eq. 1-3 for every slice at every lane it uses: its worst-case queuing delay, term by term."""
    verdicts = []
    for s in slices:
        for lane in s.lane_set:
            terms = lane_terms(slices, capacity_bps, lane)
            verdicts.append(
                SliceVerdict(s.name, sum(t.ms for t in terms), s.delay_bound_ms, terms, lane if s.lanes else None)
            )
    return tuple(verdicts)


def admit(slices: Sequence[SliceDemand], capacity_bps: float) -> Admission:
    return Admission(capacity_bps, sum(s.guaranteed_bps for s in slices), worst_case(slices, capacity_bps))


def required_capacity(
    slices: Sequence[SliceDemand],
    *,
    resolution_bps: float = 1e3,
    bound: Callable[[SliceDemand], float | None] = lambda s: s.delay_bound_ms,
) -> float:
    """The least capacity (to ``resolution_bps``) at which every slice meets ``bound``.

    Worst-case delays only fall as capacity grows, so a bisection between the rates that
    must be carried anyway and a capacity that clearly suffices finds it.
    """
    bounded = [replace(s, delay_bound_ms=bound(s)) for s in slices]

    def fits(c: float) -> bool:
        return admit(bounded, c).ok

    lo = sum(s.rate_limit_bps for s in slices)
    if fits(lo):
        return lo
    hi = max(lo, 1e6) * 2
    while not fits(hi):
        hi *= 2
        if hi > 1e15:
            raise ValueError("no capacity meets the bounds (a bound of 0 ms?)")
    while hi - lo > resolution_bps:
        mid = (lo + hi) / 2
        lo, hi = (lo, mid) if fits(mid) else (mid, hi)
    return hi


@dataclass(frozen=True)
class PortLoad:
    """The guaranteed rates of the slices bound to one port against the port's capacity."""

    port: str
    capacity_bps: float
    terms: tuple[tuple[str, float], ...]  # (slice name, guaranteed bit/s), each slice bound to the port

    @property
    def guaranteed_bps(self) -> float:
        return sum(bps for _, bps in self.terms)

    @property
    def ok(self) -> bool:
        return self.guaranteed_bps <= self.capacity_bps


def port_loads(
    port_bps: Mapping[str, float], bound: Mapping[str, Sequence[str]], guaranteed_bps: Mapping[str, float]
) -> tuple[PortLoad, ...]:
    """Σ guarantees per port (the link check of Eq. 2's premise, port by port).

    ``port_bps``: the ports with a recorded capacity; ``bound``: port -> the slices whose
    traffic it carries; ``guaranteed_bps``: slice -> its guaranteed rate (0: no promise).
    Only ports with a capacity are checked: a port without one is limited by the link alone.
    """
    return tuple(
        PortLoad(
            port,
            float(cap),
            tuple((name, guaranteed_bps.get(name, 0.0)) for name in bound.get(port, ()) if guaranteed_bps.get(name)),
        )
        for port, cap in sorted(port_bps.items(), key=lambda kv: _port_order(kv[0]))
    )


def _port_order(port: str) -> tuple[int, str]:
    return (int(port), "") if port.isdigit() else (1 << 31, port)
