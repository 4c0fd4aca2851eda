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


def test_slice_stats_offsets_and_window_match_the_rtl() -> None:
    st = localparams(RTL / "sp_slice_stats.v", "ST_")
    assert st.pop("ST_STRIDE") == regmap.STATS_STRIDE
    assert st.pop("ST_DELAY_BUCKETS") == regmap.STATS_DELAY_BUCKETS
    fields = {name.removeprefix("ST_").lower(): off for name, off in st.items()}
    assert fields == regmap.STATS_FIELDS
    src = (RTL / "sp_slice_stats.v").read_text()
    assert re.search(rf"localparam BUCKETS = {regmap.DELAY_BUCKETS};", src)
    top = (RTL / "sp_datapath.v").read_text()
    window = re.search(r"wire rd_stats = reg_rd_en && reg_rd_addr\[19:17\] == 3'b([01]{3});", top)
    assert window and int(window.group(1), 2) << 17 == regmap.STATS
    for name in ("STATS_SLICES", "epoch_reg"):
        reg = re.search(rf"16'h([0-9a-f]{{4}}): global_rd_data <= {name};", top)
        assert reg and int(reg.group(1), 16) == getattr(regmap, name.removesuffix("_reg").upper()), name
    epoch_write = re.search(r"reg_wr_addr\[15:0\] == 16'h([0-9a-f]{4}) && epoch_reg == 32'd0", top)
    assert epoch_write and int(epoch_write.group(1), 16) == regmap.EPOCH
