"""The driver's register map (regmap.py) and the RTL's address decode agree: the rate
limiter's window offsets are the RL_* localparams of sp_rate_limiter.v, its window base is
the one sp_datapath decodes, and the CLOCK_HZ register sits where the global block answers
it. (The cocotb datapath tests then drive the RTL through regmap and would fail on any
other disagreement.)"""

from __future__ import annotations

import re
from pathlib import Path

from sliceportal_netfpga import regmap

RTL = Path(__file__).resolve().parents[1] / "rtl"


def localparams(path: Path, prefix: str) -> dict[str, int]:
    src = path.read_text()
    return {
        m.group(1): int(m.group(2), 16)
        for m in re.finditer(rf"localparam \[15:0\] ({prefix}\w+) = 16'h([0-9a-fA-F_]+);", src)
    }


def test_rate_limiter_offsets_match_the_rtl() -> None:
    rl = localparams(RTL / "sp_rate_limiter.v", "RL_")
    assert rl.pop("RL_STRIDE") == regmap.RATE_STRIDE
    assert rl.pop("RL_SLICES") == regmap.RATE_SLICES - regmap.RATE
    assert rl.pop("RL_FRAC_BITS") == regmap.RATE_FRAC_BITS - regmap.RATE
    fields = {name.removeprefix("RL_").lower(): off for name, off in rl.items()}
    assert fields == regmap.RATE_FIELDS


def test_rate_window_and_clock_register_decode() -> None:
    top = (RTL / "sp_datapath.v").read_text()
    nibble = int(re.search(r"wire wr_rate = reg_wr_en && reg_wr_addr\[19:16\] == 4'h([0-9A-Fa-f]);", top).group(1), 16)  # type: ignore[union-attr]
    assert nibble << 16 == regmap.RATE
    clock = re.search(r"16'h([0-9a-f]{4}): global_rd_data <= CLOCK_HZ;", top)
    assert clock and int(clock.group(1), 16) == regmap.CLOCK_HZ
