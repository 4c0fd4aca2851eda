"""The P4Info the driver speaks: loaded from text, every id resolved by name."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from google.protobuf import text_format
from p4.config.v1 import p4info_pb2

ING, EGR = "SlicingIngress", "SlicingEgress"
PORT_TENANT = f"{ING}.tenant.port_tenant"
VLAN_TENANT = f"{ING}.tenant.vlan_tenant"
CLASSIFIER = f"{ING}.classifier.classifier"
SLICE_QOS = f"{ING}.vqueue.slice_qos"
TENANT_FORWARD = f"{ING}.fwd.tenant_forward"
EGRESS_VLAN = f"{EGR}.vlan_tag.egress_vlan"
SLICE_METER = f"{ING}.vqueue.slice_meter"
VQUEUE_REGISTERS = (f"{ING}.vqueue.slice_ts", f"{ING}.vqueue.slice_delay", f"{ING}.vqueue.slice_delay_max")


def default_p4info_path() -> Path:
    """dataplane/bmv2/slicing.p4info.txt of the checkout this package lives in."""
    for parent in Path(__file__).resolve().parents:
        candidate = parent / "dataplane" / "bmv2" / "slicing.p4info.txt"
        if candidate.is_file():
            return candidate
    raise FileNotFoundError("slicing.p4info.txt not found; set the backend option 'p4info'")


@dataclass
class P4Info:
    proto: p4info_pb2.P4Info

    @classmethod
    def load(cls, path: Path) -> P4Info:
        return cls(text_format.Parse(path.read_text(), p4info_pb2.P4Info()))

    def _find(self, kind: str, name: str) -> p4info_pb2.Table:
        for obj in getattr(self.proto, kind):
            if obj.preamble.name == name:
                return obj
        raise KeyError(f"{kind[:-1]} {name!r} is not in the P4Info")

    def table(self, name: str) -> p4info_pb2.Table:
        return self._find("tables", name)

    def action(self, name: str) -> p4info_pb2.Action:
        return self._find("actions", name)

    def action_by_id(self, action_id: int) -> p4info_pb2.Action:
        return next(a for a in self.proto.actions if a.preamble.id == action_id)

    def table_by_id(self, table_id: int) -> p4info_pb2.Table:
        return next(t for t in self.proto.tables if t.preamble.id == table_id)

    def counter_id(self, name: str) -> int:
        return int(self._find("counters", name).preamble.id)

    def register(self, name: str) -> p4info_pb2.Register:
        return self._find("registers", name)

    def meter(self, name: str) -> p4info_pb2.Meter:
        return self._find("meters", name)
