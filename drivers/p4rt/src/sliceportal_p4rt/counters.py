"""The p4rt driver's ``Counters``: per rule (the classifier's direct counter, read with its
entries so the owner tag tells ours), per slice and lane (``telemetry``), on the miss path,
malformed frames, and the epoch they count from (the pipeline's cookie).

Split from the driver (#31); the driver turns a failed read into ``UnreachableError``.
"""

from __future__ import annotations

import time
from collections.abc import Mapping

from p4.v1 import p4runtime_pb2

from sliceportal.drivers.contract import Counters, LaneCounters

from . import telemetry
from .client import Session
from .codec import EntryCodec
from .lowering import MatchKey, match_key
from .p4info import CLASSIFIER, EGR, ING


def read_counters(
    s: Session, codec: EntryCodec, rule_of: Mapping[tuple[MatchKey, int], int], qos_mode: str, lanes: int
) -> Counters:
    """Every counter of ours on the switch ``s``; ``rule_of`` maps (match, priority) to the IR
    rule index of the version pushed (empty: rank by priority). Raises grpc.RpcError."""
    p4info = codec.p4info
    ids = {
        p4info.counter_id(n): n
        for n in (
            f"{ING}.classifier.slice_rx",
            f"{ING}.classifier.malformed",
            f"{ING}.vqueue.slice_drops",
            f"{ING}.vqueue.slice_ecn_marks",
            f"{EGR}.vlan_tag.lane_tx",
            f"{EGR}.vlan_tag.slice_tx",
        )
    }
    ents = []
    for cid in ids:
        e = p4runtime_pb2.Entity()
        e.counter_entry.counter_id = cid
        ents.append(e)
    # Per-rule hits come with the classifier's entries (counter_data set in the read):
    # a DirectCounterEntry read from BMv2 carries the match and priority but not the
    # entry's metadata, so the owner tag could not tell our rules from others'.
    hits = p4runtime_pb2.Entity()
    hits.table_entry.table_id = p4info.table(CLASSIFIER).preamble.id
    hits.table_entry.counter_data.SetInParent()
    ents.append(hits)
    epoch = pipeline_epoch(s)
    got = s.read(ents)
    cells: dict[str, dict[int, tuple[int, int]]] = {n: {} for n in ids.values()}
    rules: dict[int, LaneCounters] = {}
    ours: list[tuple[MatchKey, int, LaneCounters]] = []
    for ent in got:
        if ent.HasField("counter_entry"):
            c = ent.counter_entry
            cells[ids[c.counter_id]][c.index.index] = (c.data.packet_count, c.data.byte_count)
        elif ent.table_entry.metadata == codec.tag and not ent.table_entry.is_default_action:
            te = ent.table_entry
            _, rule = codec.entry(te)
            ours.append(
                (
                    match_key(rule),
                    te.priority,
                    LaneCounters(packets=te.counter_data.packet_count, bytes=te.counter_data.byte_count),
                )
            )
    # Priorities are not rule indices (they keep across versions): the index comes from
    # the lowering of the version pushed; a driver that pushed none here ranks by priority.
    ours.sort(key=lambda t: -t[1])
    for rank, (key, prio, hits) in enumerate(ours):
        index = rule_of.get((key, prio)) if rule_of else rank
        if index is not None:
            rules[index] = hits
    rx, tx = cells[f"{ING}.classifier.slice_rx"], cells[f"{EGR}.vlan_tag.slice_tx"]
    drops, marks = cells[f"{ING}.vqueue.slice_drops"], cells[f"{ING}.vqueue.slice_ecn_marks"]
    reason = "vqueue_burst" if qos_mode == "vqueue" else "meter_red"
    slices = {}
    for sid, (pk, by) in tx.items():
        if sid == 0 or not (pk or rx.get(sid, (0, 0))[0]):
            continue
        d = drops.get(sid, (0, 0))[0]
        slices[sid] = LaneCounters(
            packets=pk, bytes=by, drops={reason: d} if d else {}, ecn_marks=marks.get(sid, (0, 0))[0]
        )
    lane_totals = {
        f"0/{i}": LaneCounters(packets=pk, bytes=by)
        for i, (pk, by) in cells[f"{EGR}.vlan_tag.lane_tx"].items()
        if i < lanes
    }
    miss = rx.get(0, (0, 0))
    seen = {sid for c in (rx, tx, drops) for sid, (pk, _) in c.items() if pk}
    slice_lanes = telemetry.read_slice_lanes(s.read, p4info, sorted(seen), lanes, reason)
    return Counters(
        timestamp=time.time(),
        epoch=epoch,
        slice_lanes=slice_lanes,
        rules=rules,
        lanes=lane_totals,
        slices=slices,
        misses=LaneCounters(packets=miss[0], bytes=miss[1]),
        malformed=cells[f"{ING}.classifier.malformed"].get(0, (0, 0))[0],
    )


def pipeline_epoch(s: Session) -> str:
    """The pipeline's cookie (telemetry.py): changes whenever the counters restart."""
    req = p4runtime_pb2.GetForwardingPipelineConfigRequest(
        device_id=s.device_id, response_type=p4runtime_pb2.GetForwardingPipelineConfigRequest.COOKIE_ONLY
    )
    resp = s.stub.GetForwardingPipelineConfig(req, timeout=s.timeout)
    return f"{resp.config.cookie.cookie:x}"
