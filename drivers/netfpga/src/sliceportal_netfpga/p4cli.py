"""Export TCAM entries as P4-NetFPGA ``P4_SWITCH_CLI.py`` commands (commands.txt).

Table and action names are those of dataplane/netfpga/p4 (``slice_classifier`` /
``set_queue``); key order is the program's: src_ip, dst_ip, dst_port, dscp.
"""

from __future__ import annotations

from collections.abc import Iterable

from .tcam import TcamEntry

TABLE = "slice_classifier"
ACTION = "set_queue"


def export_commands(entries: Iterable[TcamEntry]) -> str:
    lines = []
    for address, e in enumerate(entries):
        k, m, a = e.key, e.mask, e.action
        keys = " ".join(
            f"{v:#x}/{mk:#x}"
            for v, mk in ((k.src_ip, m.src_ip), (k.dst_ip, m.dst_ip), (k.dst_port, m.dst_port), (k.dscp, m.dscp))
        )
        lines.append(f"table_tcam_add_entry {TABLE} {address} {ACTION} {keys} => {a.rr_path} {a.lane} {a.slice_id}")
    return "\n".join(lines) + ("\n" if lines else "")
