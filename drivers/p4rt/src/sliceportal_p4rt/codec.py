"""P4Runtime entities of slicing.p4's entries, both ways: native entries (``NativeEntry``) to
``Update`` messages -- built with the protobuf API, or straight to wire bytes for the push path,
with the bytes of a lowered plan's entries built once at lowering -- and entries read back from
the switch to native entries (only those carrying the owner tag).

Split from the driver (#31): what an entry is on the wire is this module's; sessions, diffs,
pushes and counters are the driver's.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from p4.v1 import p4runtime_pb2

from sliceportal.drivers.contract import NativeEntry

from . import wire
from .lowering import entry_sort_key
from .p4info import ING, SLICE_METER, P4Info

# Table entries as read back, by their bytes, for every codec of one P4Info in this process:
# the backends of a fleet read back the same entries after the same push, decoded once here
# instead of once a backend (decoding was a tenth of a fan-out's CPU a backend; bench
# scale_backends). Entries are shared, as every read's are: nobody changes one in place.
_DECODED: dict[tuple[bytes, bytes], tuple[str, NativeEntry]] = {}
_DECODED_MAX = 50_000  # entries; emptied when full (a fleet's reads refill it at once)

Update = p4runtime_pb2.Update
FieldMatch = p4runtime_pb2.FieldMatch
Pending = tuple[int, bytes]  # (Update.Type, serialized Update)
# (Update.Type asked for, table, entry, its identity or None): encoded batch by batch
Op = tuple[int, str, NativeEntry, object]


def ident(e: NativeEntry) -> object:
    """What P4Runtime identifies an entry by; a tuple, cheaper than a JSON key."""
    if e.get("default"):
        return "default"
    if "index" in e:
        return ("index", e["index"])
    return (e["priority"], tuple(sorted((k, tuple(v)) for k, v in e["match"].items())))


def _enc(value: int) -> bytes:
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


# A rule set repeats most match fields (tenant, has_* bits, masks) and every action: their
# wire bytes are built once (they were most of the driver's cost per entry).
@functools.lru_cache(maxsize=1 << 16)
def _match_field(field_id: int, exact: bool, value: int, mask: int) -> bytes:
    return wire.match_field(wire.field_match(field_id, exact, _enc(value), b"" if exact else _enc(mask)))


@functools.lru_cache(maxsize=1 << 12)
def _action_field(action_id: int, params: tuple[tuple[int, int], ...]) -> bytes:
    return wire.table_action_field(wire.action(action_id, [(pid, _enc(v)) for pid, v in params]))


@dataclass(frozen=True)
class Encoded:
    """A plan's entries as wire bytes (``EntryCodec.encode_plan``); read-only once made."""

    by_ident: dict[tuple[str, object], tuple[NativeEntry, bytes]]  # (table, P4Runtime identity)
    by_object: dict[int, tuple[NativeEntry, bytes]]  # by the entry object's id
    idents: dict[int, tuple[NativeEntry, object]]  # entry object's id -> (entry, identity)


class EntryCodec:
    """The entries of one P4Info with one owner tag; ``pre_encode`` keeps the last lowering's bytes."""

    def __init__(self, p4info: P4Info, tag: bytes) -> None:
        self.p4info, self.tag = p4info, tag
        self.widths = {t.preamble.name: {f.name: f.bitwidth for f in t.match_fields} for t in p4info.proto.tables}
        # Ids resolved once through the P4Info: the per-entry path does dict lookups only.
        self._tables = {
            t.preamble.name: (
                t.preamble.id,
                {f.name: (f.id, f.match_type == f.EXACT) for f in t.match_fields},
            )
            for t in p4info.proto.tables
        }
        self._actions = {
            a.preamble.name: (a.preamble.id, [(p.name, p.id) for p in a.params]) for a in p4info.proto.actions
        }
        self._wire_tables = {name: (wire.table_id(tid), fields) for name, (tid, fields) in self._tables.items()}
        # and the way back, for reading: a read-back decodes every entry twice per push
        self._tables_by_id = {
            t.preamble.id: (t.preamble.name, {f.id: (f.name, (1 << f.bitwidth) - 1) for f in t.match_fields})
            for t in p4info.proto.tables
        }
        self._actions_by_id = {
            a.preamble.id: (a.preamble.name, [p.name for p in a.params]) for a in p4info.proto.actions
        }
        self._type_fields = {t: wire.update_type(t) for t in (Update.INSERT, Update.MODIFY, Update.DELETE)}
        self._field_heads: dict[tuple[int, int], bytes] = {}  # (type, entity length) -> wire.update_field_head
        self._tag_field = wire.metadata(tag)
        self._encoded: dict[tuple[str, object], tuple[NativeEntry, bytes]] = {}
        self._encoded_ids: dict[int, tuple[NativeEntry, bytes]] = {}
        self.idents: dict[int, tuple[NativeEntry, object]] = {}
        self._last_idents: dict[int, tuple[NativeEntry, object]] = {}
        self._last_read: tuple[bytes, dict[str, list[NativeEntry]]] = (b"\x00", {})  # no read serialises to it
        self._scope = hashlib.sha256(p4info.proto.SerializeToString(deterministic=True)).digest()  # for _DECODED

    def update(self, utype: int, table: str, e: NativeEntry) -> p4runtime_pb2.Update:
        u = Update(type=utype)
        if table == SLICE_METER:
            m = u.entity.meter_entry
            m.meter_id = self.p4info.meter(table).preamble.id
            m.index.index = e["index"]
            if utype != Update.DELETE:
                m.config.cir, m.config.cburst = e["cir"], e["cburst"]
                m.config.pir, m.config.pburst = e["pir"], e["pburst"]
            else:
                u.type = Update.MODIFY  # a meter cell is never deleted, only unconfigured
            return u
        table_id, fields = self._tables[table]
        te = u.entity.table_entry
        te.table_id = table_id
        if e.get("default"):
            te.is_default_action = True
            u.type = Update.MODIFY
            if utype == Update.DELETE:
                return u  # an empty MODIFY restores the program's own default action
        else:
            te.priority = e["priority"]
            te.metadata = self.tag
            for name, (value, mask) in e["match"].items():
                field_id, exact = fields[name]
                if exact:
                    te.match.add(field_id=field_id, exact=FieldMatch.Exact(value=_enc(value)))
                else:
                    te.match.add(field_id=field_id, ternary=FieldMatch.Ternary(value=_enc(value), mask=_enc(mask)))
            if utype == Update.DELETE:
                return u
        action_id, params = self._actions[e["action"]]
        action = te.action.action
        action.action_id = action_id
        for name, param_id in params:
            action.params.add(param_id=param_id, value=_enc(e["params"][name]))
        return u

    def update_bytes(self, utype: int, table: str, e: NativeEntry) -> Pending:
        """``update`` serialized, written straight to bytes for table entries (wire.py; the
        protobuf API costs more than the switch does). (update type, serialized Update)."""
        if table == SLICE_METER:
            u = self.update(utype, table, e)
            return u.type, u.SerializeToString()
        table_id, fields = self._tables[table]
        matches = b""
        if e.get("default"):
            if utype == Update.DELETE:
                return Update.MODIFY, wire.table_update(Update.MODIFY, table_id, is_default=True)
            utype, priority, tag = Update.MODIFY, 0, b""
        else:
            matches = b"".join(_match_field(*fields[name], value, mask) for name, (value, mask) in e["match"].items())
            priority, tag = e["priority"], self.tag
            if utype == Update.DELETE:
                return utype, wire.entry_update(utype, table_id, matches, b"", priority, tag)
        action_id, params = self._actions[e["action"]]
        act = _action_field(action_id, tuple((pid, e["params"][name]) for name, pid in params))
        return utype, wire.entry_update(utype, table_id, matches, act, priority, tag, bool(e.get("default")))

    def entry(self, te: p4runtime_pb2.TableEntry) -> tuple[str, NativeEntry]:
        name, fields = self._tables_by_id[te.table_id]
        act = te.action.action
        action, param_names = self._actions_by_id[act.action_id]
        params = {p: int.from_bytes(v.value, "big") for p, v in zip(param_names, act.params, strict=True)}
        if te.is_default_action:
            return name, {"default": True, "action": action, "params": params}
        match: dict[str, list[int]] = {}
        for fm in te.match:
            fname, full = fields[fm.field_id]
            if fm.HasField("exact"):
                match[fname] = [int.from_bytes(fm.exact.value, "big"), full]
            else:
                match[fname] = [int.from_bytes(fm.ternary.value, "big"), int.from_bytes(fm.ternary.mask, "big")]
        return name, {"match": match, "priority": te.priority, "action": action, "params": params}

    def read_request(self) -> list[p4runtime_pb2.Entity]:
        """Every table entry (ours are told by their metadata), the default actions a
        controller may set, and the meter's cells."""
        ents = [p4runtime_pb2.Entity(table_entry=p4runtime_pb2.TableEntry())]
        for t in self.p4info.proto.tables:
            if not t.const_default_action_id:
                ents.append(
                    p4runtime_pb2.Entity(
                        table_entry=p4runtime_pb2.TableEntry(table_id=t.preamble.id, is_default_action=True)
                    )
                )
        meter = p4runtime_pb2.Entity()
        meter.meter_entry.meter_id = self.p4info.meter(SLICE_METER).preamble.id
        ents.append(meter)
        return ents

    def tables_of(self, entities: Sequence[p4runtime_pb2.Entity]) -> dict[str, list[NativeEntry]]:
        """The entries of a read, by table. A read the same to the byte as the last one is not
        decoded again: a reconcile pass reads back every backend, almost always unchanged, and
        decoding was a third of its CPU (0.05 ms to serialise 114 entries, ~1.5 ms to decode)."""
        raw = [e.SerializeToString() for e in entities]
        key = b"".join(raw)
        last = self._last_read
        if key != last[0]:
            last = self._last_read = key, self._decode(entities, raw)
        return {k: list(v) for k, v in last[1].items()}

    def _entry_of(self, te: p4runtime_pb2.TableEntry, raw: bytes) -> tuple[str, NativeEntry]:
        """``entry``, decoded once a process for every codec of this P4Info (``_DECODED``)."""
        hit = _DECODED.get((self._scope, raw))
        if hit is None:
            if len(_DECODED) >= _DECODED_MAX:
                _DECODED.clear()
            hit = _DECODED[self._scope, raw] = self.entry(te)
        return hit

    def _decode(self, entities: Sequence[p4runtime_pb2.Entity], raw: Sequence[bytes]) -> dict[str, list[NativeEntry]]:
        out: dict[str, list[NativeEntry]] = {n: [] for n in self.widths}
        out[SLICE_METER] = []
        for ent, ent_raw in zip(entities, raw, strict=True):
            if ent.HasField("meter_entry"):
                m = ent.meter_entry
                if m.HasField("config") and m.config.pir:
                    out[SLICE_METER].append(
                        {
                            "index": m.index.index,
                            "cir": m.config.cir,
                            "cburst": m.config.cburst,
                            "pir": m.config.pir,
                            "pburst": m.config.pburst,
                        }
                    )
                continue
            te = ent.table_entry
            if te.is_default_action:
                name, e = self._entry_of(te, ent_raw)
                # The program's own default (miss_fixed(0)) is not ours to report.
                if not (e["action"] == f"{ING}.classifier.miss_fixed" and e["params"] == {"lane": 0}):
                    out[name].append(e)
            elif te.metadata == self.tag:
                name, e = self._entry_of(te, ent_raw)
                out[name].append(e)
        return {k: sorted(v, key=entry_sort_key) for k, v in out.items()}

    def pre_encoded(self, op: Op) -> bytes | None:
        """The entity bytes ``lower`` built for this very entry of an INSERT / MODIFY (or an
        equal one of the same identity: a plan read back from the database), else None."""
        utype, table, e, key = op
        if utype == Update.DELETE or "match" not in e:
            return None  # a DELETE carries no action; defaults and meter cells are not cached
        hit = self._encoded_ids.get(id(e))
        if hit is None or hit[0] is not e:
            hit = self._encoded.get((table, self.ident_of(e) if key is None else key))
        return hit[1] if hit is not None and (hit[0] is e or hit[0] == e) else None

    def encode(self, op: Op) -> bytes:
        """``update_bytes`` of an op: from the bytes ``lower`` pre-encoded when it did, else
        (and for a DELETE) built here; a default action or a meter cell by ``update_bytes``."""
        utype, table, e, _ = op
        if "match" not in e:
            return self.update_bytes(utype, table, e)[1]
        ent = self.pre_encoded(op)
        if ent is None:
            ent = self.entity(table, e, with_action=utype != Update.DELETE)
        return self._type_fields[utype] + ent

    def frame(self, op: Op) -> bytes:
        """``encode`` as a WriteRequest ``updates`` field (the push path's unit): for a
        pre-encoded entry one cached head and one concatenation."""
        ent = self.pre_encoded(op)
        if ent is None:
            return wire.update_field(self.encode(op))
        key = (op[0], len(ent))
        head = self._field_heads.get(key)
        if head is None:
            head = self._field_heads[key] = wire.update_field_head(self._type_fields[op[0]], len(ent))
        return head + ent

    def entity(self, table: str, e: NativeEntry, with_action: bool = True) -> bytes:
        """The Update's entity field for a table entry with a match: inline, from the per-table
        constants and the caches of repeated fields (the push path's bulk)."""
        table_field, fields = self._wire_tables[table]
        te = table_field + b"".join([_match_field(*fields[k], v[0], v[1]) for k, v in e["match"].items()])
        if with_action:
            action_id, params = self._actions[e["action"]]
            p = e["params"]
            te += _action_field(action_id, tuple([(pid, p[name]) for name, pid in params]))
        return wire.entity(te + wire.priority(e["priority"]) + self._tag_field)

    def pre_encode(self, tables: Mapping[str, list[NativeEntry]]) -> None:
        """Build the plan's entries as wire bytes now (P4Runtime identity -> (entry, bytes)), so
        that a push of this plan (or of a copy read back from the database) only looks them
        up. The last lowering's only: a preview of another version replaces them."""
        self.adopt(self.encode_plan(tables))

    def encode_plan(self, tables: Mapping[str, list[NativeEntry]]) -> Encoded:
        """``pre_encode``'s bytes without keeping them: for a plan several switches share (any
        codec of the same P4Info and owner tag can ``adopt`` them)."""
        encoded: dict[tuple[str, object], tuple[NativeEntry, bytes]] = {}
        idents: dict[int, tuple[NativeEntry, object]] = {}
        for table, entries in tables.items():
            if table == SLICE_METER:
                continue
            for e in entries:
                if "match" in e:
                    key = ident(e)
                    idents[id(e)] = (e, key)
                    encoded[table, key] = (e, self.entity(table, e))
        # the same by the entry object (kept alive by the map, so its id is its own): no
        # identity to compute for a push of this very plan into an empty table
        return Encoded(encoded, {id(hit[0]): hit for hit in encoded.values()}, idents)

    def adopt(self, plan: Encoded) -> None:
        """Make ``plan`` (``encode_plan``) the last lowering's bytes."""
        self._encoded, self._encoded_ids = plan.by_ident, plan.by_object
        # identities by entry object, of this lowering and the one before (usually what the
        # switch holds when this one is pushed: the diff's other side)
        self.idents, self._last_idents = self._last_idents | plan.idents, plan.idents

    def ident_of(self, e: NativeEntry) -> object:
        """``ident(e)``, known without recomputing for an entry of the last two lowerings."""
        hit = self.idents.get(id(e))
        return hit[1] if hit is not None and hit[0] is e else ident(e)
