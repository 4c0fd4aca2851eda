"""The program the driver speaks: p4c's compilation of slicing.p4, shipped with the
repository (dataplane/bmv2/compiled/), every id resolved by name through p4c's P4Info.

There is deliberately no option to point the driver at other files: the backend record is
user-editable, and a server path there would let a user make the portal read any file.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from functools import cache
from pathlib import Path

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

P4INFO_BIN = "slicing.p4info.bin"
BMV2_JSON = "slicing.json"


def compiled_dir() -> Path:
    """p4c's build of slicing.p4: inside the installed wheel (``compiled/``, copied there at build
    time), else dataplane/bmv2/compiled of the checkout this package lives in (``make compile``)."""
    here = Path(__file__).resolve()
    if (here.parent / "compiled" / P4INFO_BIN).is_file():
        return here.parent / "compiled"
    for parent in here.parents:
        candidate = parent / "dataplane" / "bmv2" / "compiled"
        if (candidate / P4INFO_BIN).is_file():
            return candidate
    raise FileNotFoundError(
        "dataplane/bmv2/compiled/slicing.p4info.bin not found next to the p4rt driver; "
        "run `make -C dataplane/bmv2 compile` with p4c"
    )


@dataclass(frozen=True)
class Program:
    """What SetForwardingPipelineConfig pushes: p4c's P4Info and its BMv2 JSON."""

    p4info: p4info_pb2.P4Info
    device_config: bytes


@cache
def shipped_program() -> Program:
    d = compiled_dir()
    info = p4info_pb2.P4Info()
    info.ParseFromString((d / P4INFO_BIN).read_bytes())
    return Program(info, (d / BMV2_JSON).read_bytes())


@dataclass
class P4Info:
    """Name lookups over a P4Info, indexed once (the driver's hot path uses them)."""

    proto: p4info_pb2.P4Info
    _by_name: dict[tuple[str, str], object] = field(default_factory=dict, repr=False)

    def __post_init__(self) -> None:
        for kind in ("tables", "actions", "counters", "direct_counters", "meters", "registers"):
            for obj in getattr(self.proto, kind):
                self._by_name[kind, obj.preamble.name] = obj

    def _find(self, kind: str, name: str) -> object:
        try:
            return self._by_name[kind, name]
        except KeyError:
            raise KeyError(f"{kind[:-1]} {name!r} is not in the P4Info") from None

    def table(self, name: str) -> p4info_pb2.Table:
        t = self._find("tables", name)
        assert isinstance(t, p4info_pb2.Table)
        return t

    def action(self, name: str) -> p4info_pb2.Action:
        a = self._find("actions", name)
        assert isinstance(a, p4info_pb2.Action)
        return a

    def counter_id(self, name: str) -> int:
        c = self._find("counters", name)
        assert isinstance(c, p4info_pb2.Counter)
        return int(c.preamble.id)

    def register(self, name: str) -> p4info_pb2.Register:
        r = self._find("registers", name)
        assert isinstance(r, p4info_pb2.Register)
        return r

    def meter(self, name: str) -> p4info_pb2.Meter:
        m = self._find("meters", name)
        assert isinstance(m, p4info_pb2.Meter)
        return m
