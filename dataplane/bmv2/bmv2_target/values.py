"""P4Runtime values as the target takes them: bytestrings and an action's parameters,
refused as PI refuses them (shared by table entries and action-profile members)."""

from __future__ import annotations

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .errors import invalid


def decode(data: bytes, bitwidth: int, what: str) -> int:
    """A P4Runtime bytestring as an int, rejecting what PI rejects. Leading zero bytes are
    accepted (PI canonicalises them: 00 00 01 is port 1), only the value must fit."""
    if not data:
        raise invalid(f"{what}: empty bytestring")
    value = int.from_bytes(data, "big")
    if value >> bitwidth:
        raise invalid(f"{what}: value {value:#x} does not fit in {bitwidth} bits")
    return value


def action_params(a: p4info_pb2.Action, action: p4runtime_pb2.Action) -> tuple[int, ...]:
    """``action``'s parameter values in ``a``'s order: each known, given once, none missing."""
    by_id = {p.id: p for p in a.params}
    values: dict[int, int] = {}
    for p in action.params:
        spec = by_id.get(p.param_id)
        if spec is None:
            raise invalid(f"action {a.preamble.name}: unknown parameter id {p.param_id}")
        if p.param_id in values:
            raise invalid(f"action {a.preamble.name}: parameter {spec.name} given twice")
        values[p.param_id] = decode(p.value, spec.bitwidth, f"{a.preamble.name}.{spec.name}")
    missing = [p.name for p in a.params if p.id not in values]
    if missing:
        raise invalid(f"action {a.preamble.name}: missing parameters {missing}")
    return tuple(values[p.id] for p in a.params)
