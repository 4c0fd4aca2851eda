"""The P4 program, the RTL and the driver agree on the table layout (no P4 compiler
exists on these machines, so this checks the source the P4-NetFPGA flow would compile)."""

from __future__ import annotations

import re
from pathlib import Path

from sliceportal_netfpga import p4cli
from sliceportal_netfpga.tcam import KEY_FIELDS

P4 = Path(__file__).resolve().parents[1] / "p4"


def test_classifier_table_matches_driver_export() -> None:
    src = (P4 / "include" / "classifier.p4").read_text()
    table = re.search(r"table\s+(\w+)\s*\{(.*?)\n    \}", src, re.S)
    assert table and table.group(1) == p4cli.TABLE
    keys = re.findall(r"user_metadata\.(\w+):\s*ternary\s*@name\(\"(\w+)\"\)", table.group(2))
    assert [name for _, name in keys] == ["src_ip", "dst_ip", "dst_port", "dscp"]
    assert set(KEY_FIELDS) == {name for _, name in keys}
    action = re.search(rf"action\s+{p4cli.ACTION}\(([^)]*)\)", src)
    assert action, "the exported action must exist"
    params = [p.split()[-1] for p in action.group(1).split(",")]
    assert params == ["rr", "prio", "slice_id"]  # the order export_commands writes
    size = (P4 / "include" / "size.p4").read_text()
    assert re.search(r"#define SLICE_CLASSIFIER_SIZE 64\b", size)


def test_key_widths_match_the_rtl_key() -> None:
    headers = (P4 / "include" / "headers.p4").read_text()
    widths = {m.group(2): int(m.group(1)) for m in re.finditer(r"bit<(\d+)>\s+(\w+);", headers)}
    assert (widths["src_ip"], widths["dst_ip"], widths["dst_port"], widths["dscp"]) == (32, 32, 16, 6)
    rtl = (P4.parent / "rtl" / "sp_tcam.v").read_text()
    assert "reg [KEY_W-1:0] key_mem" in rtl and "localparam KEY_W = 86;" in rtl  # 32 + 32 + 16 + 6
