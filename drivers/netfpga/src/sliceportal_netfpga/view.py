"""The TCAM entries of a plan as a ternary view (issue #20 item 4), for the preview's proof
that they classify every key exactly as the IR.

The view is the RTL's own 86-bit key (``tcam.pack_key``: src_ip, dst_ip, dscp, dst_port)
read from the plan's entries: the lowest index wins, as in the RTL, and a key no entry
matches takes the RTL's miss path, seed 000 Algorithm 1 on this geometry.
"""

from __future__ import annotations

from sliceportal.drivers.contract import NativePlan
from sliceportal.rules.equivalence import Algorithm1, Space, TernaryEntry, TernaryView

from .tcam import TcamEntry

# tcam.pack_key's layout, most significant first
KEY_SPACE = Space((("src_ip", 32), ("dst_ip", 32), ("dscp", 6), ("dst_port", 16)))


def tcam_view(plan: NativePlan, table: str, lanes: int, paths: int) -> TernaryView:
    entries = []
    for index, native in enumerate(plan.tables[table]):
        e = TcamEntry.model_validate(native)
        value, mask = e.key_bits()
        a = e.action
        entries.append(TernaryEntry(value, mask, -index, (a.slice_id, a.lane, a.rr_path)))
    return TernaryView(KEY_SPACE, tuple(entries), Algorithm1(lanes, paths), source="TCAM")
