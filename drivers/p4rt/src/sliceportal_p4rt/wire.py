"""Serialized P4Runtime updates for table entries, written straight to bytes.

p4runtime's generated code needs the pure-Python protobuf runtime (3.20), in which building
one Update message costs about half a millisecond: more than simple_switch_grpc needs to
apply it. The push path therefore writes the few message shapes it sends (an Update of a
TableEntry: ids, exact / ternary matches, a direct action with parameters, priority,
metadata) as protobuf wire format directly. Every field number comes from the generated
descriptors, never from a literal, and tests/test_client_wire.py checks that protobuf parses
these bytes into exactly the message ``EntryCodec.update`` builds with the protobuf API.
"""

from __future__ import annotations

from collections.abc import Iterable

from google.protobuf.descriptor import Descriptor
from p4.v1 import p4runtime_pb2

_ONE_BYTE = tuple(bytes((i,)) for i in range(0x80))


def varint(n: int) -> bytes:
    if n < 0x80:
        return _ONE_BYTE[n]  # ids, lengths and values of a classifier entry mostly are
    out = bytearray()
    while n > 0x7F:
        out.append(n & 0x7F | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


def _tag(message: Descriptor, field: str, wire_type: int) -> bytes:
    return varint(message.fields_by_name[field].number << 3 | wire_type)


_VARINT, _LEN = 0, 2
_U, _E, _TE = p4runtime_pb2.Update.DESCRIPTOR, p4runtime_pb2.Entity.DESCRIPTOR, p4runtime_pb2.TableEntry.DESCRIPTOR
_FM, _TA = p4runtime_pb2.FieldMatch.DESCRIPTOR, p4runtime_pb2.TableAction.DESCRIPTOR
_A = p4runtime_pb2.Action.DESCRIPTOR
_EX, _TER = p4runtime_pb2.FieldMatch.Exact.DESCRIPTOR, p4runtime_pb2.FieldMatch.Ternary.DESCRIPTOR
_P = p4runtime_pb2.Action.Param.DESCRIPTOR

U_TYPE, U_ENTITY = _tag(_U, "type", _VARINT), _tag(_U, "entity", _LEN)
E_TABLE_ENTRY = _tag(_E, "table_entry", _LEN)
TE_TABLE_ID, TE_MATCH, TE_ACTION = _tag(_TE, "table_id", _VARINT), _tag(_TE, "match", _LEN), _tag(_TE, "action", _LEN)
TE_PRIORITY, TE_METADATA = _tag(_TE, "priority", _VARINT), _tag(_TE, "metadata", _LEN)
TE_IS_DEFAULT = _tag(_TE, "is_default_action", _VARINT)
FM_FIELD_ID, FM_EXACT, FM_TERNARY = _tag(_FM, "field_id", _VARINT), _tag(_FM, "exact", _LEN), _tag(_FM, "ternary", _LEN)
EX_VALUE, TER_VALUE, TER_MASK = _tag(_EX, "value", _LEN), _tag(_TER, "value", _LEN), _tag(_TER, "mask", _LEN)
TA_ACTION, A_ACTION_ID, A_PARAMS = _tag(_TA, "action", _LEN), _tag(_A, "action_id", _VARINT), _tag(_A, "params", _LEN)
P_ID, P_VALUE = _tag(_P, "param_id", _VARINT), _tag(_P, "value", _LEN)


def _ld(tag: bytes, body: bytes) -> bytes:
    """A length-delimited field."""
    return tag + varint(len(body)) + body


def _uint(tag: bytes, value: int) -> bytes:
    # proto3 scalars at their default value are not written (as protobuf does)
    return tag + varint(value) if value else b""


def field_match(field_id: int, exact: bool, value: bytes, mask: bytes = b"") -> bytes:
    if exact:
        kind = _ld(FM_EXACT, _ld(EX_VALUE, value))
    else:
        kind = _ld(FM_TERNARY, _ld(TER_VALUE, value) + _ld(TER_MASK, mask))
    return _uint(FM_FIELD_ID, field_id) + kind


def action(action_id: int, params: Iterable[tuple[int, bytes]]) -> bytes:
    body = _uint(A_ACTION_ID, action_id) + b"".join(
        _ld(A_PARAMS, _uint(P_ID, pid) + _ld(P_VALUE, value)) for pid, value in params
    )
    return _ld(TA_ACTION, body)


def table_update(
    utype: int,
    table_id: int,
    matches: Iterable[bytes] = (),
    table_action: bytes | None = None,
    priority: int = 0,
    metadata: bytes = b"",
    is_default: bool = False,
) -> bytes:
    """A serialized Update of one TableEntry (fields in protobuf's own order)."""
    fields = b"".join(match_field(m) for m in matches)
    action_field = b"" if table_action is None else table_action_field(table_action)
    return entry_update(utype, table_id, fields, action_field, priority, metadata, is_default)


def match_field(match: bytes) -> bytes:
    """A FieldMatch as the TableEntry's ``match`` field (cacheable by the caller)."""
    return _ld(TE_MATCH, match)


def table_action_field(table_action: bytes) -> bytes:
    """A TableAction as the TableEntry's ``action`` field (cacheable by the caller)."""
    return _ld(TE_ACTION, table_action)


def entry_update(
    utype: int,
    table_id: int,
    match_fields: bytes,
    action_field: bytes,
    priority: int = 0,
    metadata: bytes = b"",
    is_default: bool = False,
) -> bytes:
    """``table_update`` from fields already wrapped (``match_field`` / ``table_action_field``,
    concatenated): the push path builds those once per distinct value."""
    te = _uint(TE_TABLE_ID, table_id) + match_fields + action_field + _uint(TE_PRIORITY, priority)
    if is_default:
        te += _uint(TE_IS_DEFAULT, 1)
    if metadata:
        te += _ld(TE_METADATA, metadata)
    return _uint(U_TYPE, utype) + _ld(U_ENTITY, _ld(E_TABLE_ENTRY, te))


# ---- pieces of ``entry_update`` for a caller that keeps them per table (the push path) ----


def table_id(value: int) -> bytes:
    return _uint(TE_TABLE_ID, value)


def update_type(utype: int) -> bytes:
    return _uint(U_TYPE, utype)


def priority(value: int) -> bytes:
    return _uint(TE_PRIORITY, value)


def metadata(value: bytes) -> bytes:
    return _ld(TE_METADATA, value) if value else b""


def entity(table_entry: bytes) -> bytes:
    """The Update's ``entity`` field holding this serialized TableEntry."""
    return _ld(U_ENTITY, _ld(E_TABLE_ENTRY, table_entry))


# ---- a WriteRequest's ``updates`` field, the unit the push path joins into a request ----

WR_UPDATES = _tag(p4runtime_pb2.WriteRequest.DESCRIPTOR, "updates", _LEN)


def update_field(update: bytes) -> bytes:
    """A serialized Update as one element of a WriteRequest's ``updates`` (protobuf parses
    concatenated fields as one message, repeated fields in order)."""
    return _ld(WR_UPDATES, update)


def update_field_head(update_type: bytes, entity_len: int) -> bytes:
    """What precedes an Update's entity field of ``entity_len`` bytes in ``update_field``:
    the tag, the Update's length and its ``type`` field (the same for every entry of one
    type and size, so the push path caches it)."""
    return WR_UPDATES + varint(len(update_type) + entity_len) + update_type
