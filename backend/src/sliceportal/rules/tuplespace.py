"""A fast first-match classifier with exactly ``RuleIR.classify``'s semantics.

Tuple-space search: rules are grouped by their mask tuple; within one group a packet's
masked key is a dict lookup, and the lowest matching rule index over all groups wins, as
the lowest TCAM entry does. Linear ``RuleIR.classify`` over the thousands of one-per-flow
baseline rules is too slow for exhaustive equivalence tests and the bench; this is not.
"""

from __future__ import annotations

from sliceportal.rules.ir import Decision, FlowKey, Match, RuleIR

_FIELDS: tuple[str, ...] = ("src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan")

# Per field: None = wildcard, else the mask. A wildcard matches a missing header; a mask
# (even 0) requires the header, as ``Match.matches`` does.
_MaskTuple = tuple[int | None, ...]


def _mask_tuple(m: Match) -> _MaskTuple:
    return tuple(None if (t := getattr(m, f)) is None else t.mask for f in _FIELDS)


def _value_tuple(m: Match) -> tuple[int, ...]:
    return tuple(t.value for f in _FIELDS if (t := getattr(m, f)) is not None)


class TupleSpaceClassifier:
    def __init__(self, ir: RuleIR) -> None:
        self._ir = ir
        groups: dict[_MaskTuple, dict[tuple[int, ...], int]] = {}
        for i, rule in enumerate(ir.rules):
            table = groups.setdefault(_mask_tuple(rule.match), {})
            table.setdefault(_value_tuple(rule.match), i)  # first (lowest) index wins
        self._groups = list(groups.items())

    def classify(self, key: FlowKey) -> Decision:
        best: int | None = None
        for masks, table in self._groups:
            probe: list[int] = []
            for f, mask in zip(_FIELDS, masks, strict=True):
                if mask is None:
                    continue
                v = getattr(key, f)
                if v is None:
                    break
                probe.append(v & mask)
            else:
                i = table.get(tuple(probe))
                if i is not None and (best is None or i < best):
                    best = i
        if best is None:
            return self._ir.miss_decision(key)
        a = self._ir.rules[best].action
        return Decision(a.slice_id, a.lane, a.rr_path, best)
