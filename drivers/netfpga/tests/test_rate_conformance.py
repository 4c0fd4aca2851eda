"""Rate-limit conformance on the NetFPGA model (issue #17): per slice, offered 0.99 x the
limit loses nothing, offered 2 x loses 50 % +- 1 %, and the rate that passes is seed 004's
48 / 12 / 240 Mbit/s within +- 5 % -- in simulated time, through the driver's lowering and
CSR path, with every lost packet counted as a rate-limit drop (bench/rate_conformance.py
reports the same measurement with more points)."""

from __future__ import annotations

from pathlib import Path

import pytest

from sliceportal_netfpga.rate_experiment import conformance

SEED004_BPS = (48e6, 12e6, 240e6)


def test_seed004_rates_conform(sim_binary: Path) -> None:
    points = conformance(
        [(rate, factor) for rate in SEED004_BPS for factor in (0.99, 2.0)], packets=200, binary=sim_binary
    )
    for p in points:
        label = f"{p.rate_bps / 1e6:g} Mbit/s offered {p.factor} x"
        assert p.passed + p.drops == p.sent, label
        if p.factor < 1:
            assert p.loss == 0, label
        else:
            assert p.loss == pytest.approx(0.5, abs=0.01), label
            assert p.accuracy == pytest.approx(1.0, rel=0.05), label
