"""layout.py mirrors dataplane/xdp/src/sliceportal.h: the constants and the `special` slots
are checked against the header itself, so an edit of one side alone fails here (the pinned
maps' ABI digest covers the map shapes, not what a slot index means)."""

from __future__ import annotations

import re
from pathlib import Path

from sliceportal_xdp import layout

HEADER = Path(__file__).resolve().parents[3] / "dataplane" / "xdp" / "src" / "sliceportal.h"
# header name -> layout name, where they differ beyond the SP_ prefix
RENAMED = {
    "SP_IP_PREFIXES": "IP_PREFIXES",
    "SP_TUNNEL_KEYS": "TUNNEL_KEYS",
    "SP_FLOW_CACHE": "FLOW_CACHE",
    "SP_ECN_OFF": "ECN_OFF",
}
# enum sp_special field part -> the table the slot belongs to
FIELD = {
    "VNI": "vni",
    "TEID": "teid",
    "VLAN": "vlan",
    "SRC": "src_ip",
    "DST": "dst_ip",
    "PORT": "dst_port",
    "DSCP": "dscp",
}


def header_defines() -> dict[str, int]:
    out = {}
    for name, value in re.findall(r"^#define (SP_\w+) (0x[0-9a-fA-F]+|\d+)", HEADER.read_text(), re.M):
        out[name] = int(value, 0)
    return out


def test_numeric_constants_match_the_header() -> None:
    defines = header_defines()
    checked = 0
    for name, value in defines.items():
        ours = RENAMED.get(name, name.removeprefix("SP_"))
        if hasattr(layout, ours):
            assert getattr(layout, ours) == value, name
            checked += 1
    assert checked >= 15 and defines["SP_MAX_RULES"] == layout.MAX_RULES


def test_special_slots_are_the_header_enum_in_order() -> None:
    body = re.search(r"enum sp_special \{(.*?)\};", HEADER.read_text(), re.S)
    assert body is not None
    names = re.findall(r"SP_(\w+?)(?: = 0)?,", body.group(1))
    assert names[-1] == "SPECIAL_N"
    slots = []
    for n in names[:-1]:
        field, kind = n.split("_")
        slots.append(f"{FIELD[field]}_{kind.lower()}")
    assert tuple(slots) == layout.SPECIAL_SLOTS
