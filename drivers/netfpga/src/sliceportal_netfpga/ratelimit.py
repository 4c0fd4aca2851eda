"""IR per-slice rate limits -> the RTL's token buckets (rtl/sp_rate_limiter.v), and back.

A bucket is the pair the RTL holds: ``rate`` in Q8.24 bytes per clock cycle and ``burst``
in bytes. The slice's rate limit (``Qos.rate_bps``) becomes the rate at the bitstream's
clock; its burst limit (``Qos.burst_ms``, the SLA's max delay) becomes the bucket depth:
the bytes the limit passes in that time, as the XDP and P4 drivers size theirs (default
10 ms, never shallower than two maximum frames, which would refuse every full-size frame).
"""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.drivers.contract import CapacityError, DriverError
from sliceportal.rules.ir import RuleIR

FRAC_BITS = 24  # the RTL's FRAC parameter, read back and checked against RATE_FRAC_BITS
DEFAULT_BURST_MS = 10.0
MIN_BURST_BYTES = 2 * 1518
MAX_WORD = (1 << 32) - 1
TABLE = "rate_limits"


class RateLimitEntry(BaseModel):
    """One slice's bucket as the RTL's registers hold it."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    slice_id: int = Field(ge=1, lt=256)
    rate: int = Field(ge=1, le=MAX_WORD, description="Q8.24 bytes per clock cycle")
    burst: int = Field(ge=1, le=MAX_WORD, description="bytes")

    def rate_bps(self, clock_hz: int) -> float:
        """The limit the RTL enforces, in bit/s (the configured one within 2^-24 B/cycle)."""
        return rate_word_bps(self.rate, clock_hz)


def rate_word(rate_bps: float, clock_hz: int) -> int:
    """bit/s -> Q8.24 bytes per cycle, rounded to the nearest step (95 bit/s at 200 MHz)."""
    return round(rate_bps / 8 / clock_hz * (1 << FRAC_BITS))


def lower_rate_limits(ir: RuleIR, clock_hz: int, slices: int) -> list[RateLimitEntry]:
    """One bucket per rate-limited slice, by slice id; refuses what the RTL cannot hold."""
    out = []
    for s in sorted(ir.slices, key=lambda s: s.slice_id):
        rate_bps = s.qos.rate_bps
        if rate_bps is None:
            continue
        if not 1 <= s.slice_id < slices:
            raise CapacityError(TABLE, s.slice_id + 1, slices)
        if s.drops_all:
            # rate 0 (a drop intent's sub-slice): the slowest refill into a 1-byte bucket, which
            # never holds a frame -- every frame of the slice is dropped and counted (DROP_PACKETS)
            out.append(RateLimitEntry(slice_id=s.slice_id, rate=1, burst=1))
            continue
        rate = rate_word(rate_bps, clock_hz)
        if not 1 <= rate <= MAX_WORD:
            raise DriverError(
                f"slice {s.name!r}: rate limit {rate_bps} bit/s is outside what the NetFPGA limiter "
                f"sets at {clock_hz / 1e6:g} MHz ({rate_word_bps(1, clock_hz):.0f} bit/s .. "
                f"{rate_word_bps(MAX_WORD, clock_hz) / 1e9:.1f} Gbit/s)",
                hint="change the slice's sla.rate_limit_mbps",
            )
        burst_ms = s.qos.burst_ms if s.qos.burst_ms is not None else DEFAULT_BURST_MS
        burst = min(MAX_WORD, max(MIN_BURST_BYTES, int(rate_bps / 8 * burst_ms / 1000)))
        out.append(RateLimitEntry(slice_id=s.slice_id, rate=rate, burst=burst))
    return out


def rate_word_bps(rate: int, clock_hz: int) -> float:
    return rate * clock_hz * 8 / (1 << FRAC_BITS)
