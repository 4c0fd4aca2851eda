"""Lookups over a P4Info by id and by fully qualified name."""

from __future__ import annotations

from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2


@dataclass
class P4InfoIndex:
    info: p4info_pb2.P4Info
    tables: dict[int, p4info_pb2.Table] = field(default_factory=dict)
    actions: dict[int, p4info_pb2.Action] = field(default_factory=dict)
    counters: dict[int, p4info_pb2.Counter] = field(default_factory=dict)
    direct_counters: dict[int, p4info_pb2.DirectCounter] = field(default_factory=dict)
    meters: dict[int, p4info_pb2.Meter] = field(default_factory=dict)
    registers: dict[int, p4info_pb2.Register] = field(default_factory=dict)
    action_profiles: dict[int, p4info_pb2.ActionProfile] = field(default_factory=dict)
    direct_meters: dict[int, p4info_pb2.DirectMeter] = field(default_factory=dict)
    names: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, info: p4info_pb2.P4Info) -> P4InfoIndex:
        idx = cls(info)
        kinds = ("tables", "actions", "counters", "direct_counters", "meters", "registers", "action_profiles")
        for kind in (*kinds, "direct_meters"):
            target = getattr(idx, kind)
            for obj in getattr(info, kind):
                target[obj.preamble.id] = obj
                idx.names[obj.preamble.name] = obj.preamble.id
        return idx

    def id(self, name: str) -> int:
        """The id of an entity by its fully qualified name (KeyError if absent)."""
        return self.names[name]
