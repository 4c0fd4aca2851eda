"""Table entries: validation against the P4Info exactly as PI/BMv2 does it; the entries
themselves live in the engine's tables (matched there), this keeps the controller's view
(keys, metadata, read-back) and each entry's engine handle.

Error codes follow PI's P4Runtime server: unknown table / action ids NOT_FOUND; a bad
field id, wrong match kind, bytestring wider than the field, ternary value bits outside
the mask, a zero mask, a missing exact field, a wrong priority, an action the table
does not list or a bad parameter INVALID_ARGUMENT; duplicate insert ALREADY_EXISTS;
modify / delete of a missing entry NOT_FOUND; a full table UNKNOWN (not the spec's
RESOURCE_EXHAUSTED: PI's answer).
"""

from __future__ import annotations

from dataclasses import dataclass

import grpc
from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

from .engine import Engine
from .errors import P4RTError, invalid, not_found
from .p4info_index import P4InfoIndex
from .profiles import MEMBER, ProfileStore, target_error
from .values import action_params, decode

MF = p4info_pb2.MatchField
Update = p4runtime_pb2.Update


def encode(value: int) -> bytes:
    """The canonical bytestring of P4Runtime 1.x: no leading zero bytes, at least one byte."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


# A key: per match field (in P4Info order) a (value, mask) pair; (0, 0) = wildcard; a
# range field holds (low, high), (0, 2^w - 1) = wildcard.
Key = tuple[tuple[int, int], ...]

_ENGINE_KIND = {MF.EXACT: "exact", MF.TERNARY: "ternary", MF.LPM: "lpm", MF.RANGE: "range"}
# What p4c's BMv2 JSON makes of each P4Info match kind: an optional field is ternary there
# (a value with a full mask, or omitted). The write fast path knows no optional fields.
_JSON_KIND = {**_ENGINE_KIND, MF.OPTIONAL: "ternary"}


@dataclass
class Entry:
    """An entry as the engine holds it (the one store: the write fast path fills it too)."""

    key: Key
    priority: int
    action_id: int
    params: tuple[int, ...]  # in P4Info parameter order
    handle: int  # the entry in the engine's table
    metadata: bytes = b""
    controller_metadata: int = 0

    @classmethod
    def of(cls, view: tuple[int, list[tuple[int, int]], int, int, list[int], bytes, int]) -> Entry:
        handle, key, priority, action_id, params, metadata, cmeta = view
        return cls(tuple(key), priority, action_id, tuple(params), handle, bytes(metadata), cmeta)


@dataclass
class Table:
    info: p4info_pb2.Table
    fields: list[p4info_pb2.MatchField]
    needs_priority: bool
    engine_table: int
    engine_actions: dict[int, int]  # P4Info action id -> engine action index
    lpm_field: int | None = None  # the LPM field of a table without priorities
    default_action_id: int = 0
    default_params: tuple[int, ...] = ()


def _engine_table(engine: Engine, index: P4InfoIndex, t: p4info_pb2.Table) -> tuple[int, dict[int, int]]:
    """The engine's table and actions for a P4Info table, checked field by field: the
    controller's P4Info must describe the program the engine runs."""
    name = t.preamble.name
    ti = engine.table_index(name)
    if ti is None:
        raise invalid(f"the P4Info's table {name} is not in the device config (p4c's JSON)")
    _, keys, _ = engine.tables()[ti]
    mine = [(f.name, _JSON_KIND.get(f.match_type, "?"), f.bitwidth) for f in t.match_fields]
    if [tuple(k) for k in keys] != mine:
        raise invalid(f"table {name}: P4Info match fields {mine} differ from the device config's {keys}")
    actions: dict[int, int] = {}
    for ref in t.action_refs:
        aname = index.actions[ref.id].preamble.name
        ai = engine.action_of(ti, aname)
        if ai is None:
            raise invalid(f"table {name}: action {aname} is not one of the device config's")
        actions[ref.id] = ai
    return ti, actions


class TableStore:
    def __init__(self, index: P4InfoIndex, engine: Engine) -> None:
        self.index = index
        self.engine = engine
        self.tables: dict[int, Table] = {}
        # The program's default actions, as p4c writes them into the P4Info
        # (initial_default_action): what a table misses to until, and after, a controller
        # changes it.
        self.initial_defaults: dict[int, tuple[int, tuple[int, ...]]] = {}
        for tid, t in index.tables.items():
            fields = list(t.match_fields)
            needs_priority = any(f.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for f in fields)
            engine_table, engine_actions = _engine_table(engine, index, t)
            table = Table(t, fields, needs_priority, engine_table, engine_actions)
            if not needs_priority:
                table.lpm_field = next((i for i, f in enumerate(fields) if f.match_type == MF.LPM), None)
            initial = t.initial_default_action
            if initial.action_id in index.actions:
                args = {arg.param_id: int.from_bytes(arg.value, "big") for arg in initial.arguments}
                params = tuple(args.get(p.id, 0) for p in index.actions[initial.action_id].params)
                self.initial_defaults[tid] = (initial.action_id, params)
                table.default_action_id, table.default_params = self.initial_defaults[tid]
            if t.const_default_action_id:
                table.default_action_id = t.const_default_action_id
            if t.implementation_id:
                # an indirect table misses to no action (PI cannot set its default): read
                # back, its default entry has none
                table.default_action_id, table.default_params = 0, ()
            self.tables[tid] = table
            self._schema(table)
        # the members of a profile run the actions of (the first) table it implements
        self.profiles = ProfileStore(index, engine, {tid: t.engine_actions for tid, t in self.tables.items()})
        described = {t.preamble.name for t in index.tables.values()}
        # p4c's tables for `switch` statements on values are hidden from the P4Info; their
        # keys have no name (and their entries are const): no controller writes them.
        missing = [
            name for name, keys, _ in engine.tables()
            if keys and name not in described and any(k[0] for k in keys)
        ]  # fmt: skip
        if missing:
            # A P4Info for another program: the controller could not reach these tables.
            raise invalid(f"the P4Info does not describe the device config's tables {missing}")

    def _schema(self, table: Table) -> None:
        """Tell the engine's write fast path what this P4Info says of the table."""
        actions = []
        for ref in table.info.action_refs:
            a = self.index.actions[ref.id]
            default_only = ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY
            params = [(p.id, p.bitwidth) for p in a.params]
            actions.append((ref.id, table.engine_actions[ref.id], params, default_only))
        fields = [(f.id, _ENGINE_KIND.get(f.match_type, "?"), f.bitwidth) for f in table.fields]
        if all(kind != "?" for _, kind, _ in fields):
            self.engine.set_schema(
                table.info.preamble.id, table.engine_table, fields, table.needs_priority, table.info.size, actions
            )

    def rank(self, table: Table, key: Key, priority: int) -> int:
        """The engine's priority: P4Runtime's, or for LPM without priorities the prefix length."""
        return priority if table.lpm_field is None else bin(key[table.lpm_field][1]).count("1")

    def find(self, table: Table, key: Key, priority: int) -> Entry | None:
        handle = self.engine.find(table.engine_table, list(key), self.rank(table, key, priority))
        return None if handle is None else Entry.of(self.engine.entry(table.engine_table, handle))

    def commit(self) -> None:
        """Rebuild the engine's lookup index of tables changed by the last batch (once per
        batch: per update made batches quadratic)."""
        self.engine.commit()

    def counter(self, table: Table, e: Entry) -> tuple[int, int]:
        """The entry's direct counter (packets, bytes), counted by the engine."""
        counts: tuple[int, int] = self.engine.entry_counter(table.engine_table, e.handle)
        return counts

    def set_counter(self, table: Table, e: Entry, packets: int, bytes_: int) -> None:
        self.engine.set_entry_counter(table.engine_table, e.handle, packets, bytes_)

    def table(self, table_id: int) -> Table:
        try:
            return self.tables[table_id]
        except KeyError:
            raise invalid(f"unknown table id {table_id}") from None  # PI: INVALID_ARGUMENT

    # ---- validation -------------------------------------------------------------

    def _key(self, table: Table, te: p4runtime_pb2.TableEntry) -> Key:
        by_id = {f.id: f for f in table.fields}
        given: dict[int, tuple[int, int]] = {}
        for m in te.match:
            f = by_id.get(m.field_id)
            if f is None:
                raise invalid(f"table {table.info.preamble.name}: unknown match field id {m.field_id}")
            if m.field_id in given:
                raise invalid(f"match field {f.name} given twice")
            which = m.WhichOneof("field_match_type")
            full = (1 << f.bitwidth) - 1
            if f.match_type == MF.EXACT:
                if which != "exact":
                    raise invalid(f"match field {f.name} is EXACT, got {which}")
                given[m.field_id] = (decode(m.exact.value, f.bitwidth, f.name), full)
            elif f.match_type == MF.TERNARY:
                if which != "ternary":
                    raise invalid(f"match field {f.name} is TERNARY, got {which}")
                value = decode(m.ternary.value, f.bitwidth, f.name)
                mask = decode(m.ternary.mask, f.bitwidth, f.name + " mask")
                if mask == 0:
                    raise invalid(f"match field {f.name}: a zero mask must be omitted (don't care)")
                if value & ~mask:
                    raise invalid(f"match field {f.name}: value {value:#x} has bits outside mask {mask:#x}")
                given[m.field_id] = (value, mask)
            elif f.match_type == MF.OPTIONAL:
                if which != "optional":
                    raise invalid(f"match field {f.name} is OPTIONAL, got {which}")
                given[m.field_id] = (decode(m.optional.value, f.bitwidth, f.name), full)
            elif f.match_type == MF.LPM:
                if which != "lpm":
                    raise invalid(f"match field {f.name} is LPM, got {which}")
                plen = m.lpm.prefix_len
                if not 0 < plen <= f.bitwidth:
                    raise invalid(f"match field {f.name}: bad prefix length {plen}")
                mask = full ^ ((1 << (f.bitwidth - plen)) - 1)
                value = decode(m.lpm.value, f.bitwidth, f.name)
                if value & ~mask:
                    raise invalid(f"match field {f.name}: value has bits outside the prefix")
                given[m.field_id] = (value, mask)
            elif f.match_type == MF.RANGE:
                if which != "range":
                    raise invalid(f"match field {f.name} is RANGE, got {which}")
                low = decode(m.range.low, f.bitwidth, f.name + " low")
                high = decode(m.range.high, f.bitwidth, f.name + " high")
                if low > high:
                    raise invalid(f"match field {f.name}: range low {low} above high {high}")
                if (low, high) == (0, full):
                    raise invalid(f"match field {f.name}: a full range must be omitted (don't care)")
                given[m.field_id] = (low, high)
            else:
                raise P4RTError(grpc.StatusCode.UNIMPLEMENTED, f"match kind of {f.name} not supported")
        key = []
        for f in table.fields:
            if f.bitwidth > 64:  # the engine's keys are u64: the table runs (and misses) without entries
                raise P4RTError(
                    grpc.StatusCode.UNIMPLEMENTED,
                    f"table {table.info.preamble.name}: key field {f.name} is {f.bitwidth} bits wide "
                    "(this target takes no entries on fields wider than 64 bits)",
                )
            if f.id in given:
                key.append(given[f.id])
            elif f.match_type == MF.EXACT:
                raise invalid(f"exact match field {f.name} is missing")
            elif f.match_type == MF.RANGE:
                key.append((0, (1 << f.bitwidth) - 1))
            else:
                key.append((0, 0))
        return tuple(key)

    def _action(self, table: Table, action: p4runtime_pb2.Action, default: bool) -> tuple[int, tuple[int, ...]]:
        a = self.index.actions.get(action.action_id)
        if a is None:
            raise invalid(f"unknown action id {action.action_id}")
        ref = next((r for r in table.info.action_refs if r.id == action.action_id), None)
        if ref is None:
            raise invalid(f"action {a.preamble.name} is not an action of table {table.info.preamble.name}")
        if not default and ref.scope == p4info_pb2.ActionRef.DEFAULT_ONLY:
            where = f"{a.preamble.name} is default-only in {table.info.preamble.name}"
            raise P4RTError(grpc.StatusCode.PERMISSION_DENIED, f"action {where}")
        if default and ref.scope == p4info_pb2.ActionRef.TABLE_ONLY:
            raise invalid(f"action {a.preamble.name} cannot be a default action")
        return action.action_id, action_params(a, action)

    # ---- writes -----------------------------------------------------------------

    def write(self, utype: int, te: p4runtime_pb2.TableEntry) -> None:
        table = self.table(te.table_id)
        if te.is_default_action:
            self._write_default(table, utype, te)
            return
        key = self._key(table, te)
        if table.needs_priority and te.priority <= 0:
            raise invalid(f"table {table.info.preamble.name} needs a priority > 0")
        if not table.needs_priority and te.priority != 0:
            raise invalid(f"table {table.info.preamble.name} takes no priority")
        rank = self.rank(table, key, te.priority)
        handle = self.engine.find(table.engine_table, list(key), rank)
        if utype == Update.DELETE:
            if handle is None:
                raise not_found(f"no such entry in {table.info.preamble.name}")
            self.engine.delete(table.engine_table, handle)
            return
        if table.info.implementation_id:
            self._write_indirect(table, utype, te, key, rank, handle)
            return
        if te.action.WhichOneof("type") != "action":
            what = "'action' field must be set" if not te.HasField("action") else "an indirect action"
            raise invalid(f"{what} for the direct table {table.info.preamble.name}")
        action_id, params = self._action(table, te.action.action, default=False)
        engine_action = table.engine_actions[action_id]
        if utype == Update.INSERT:
            if handle is not None:
                raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"entry already exists in {table.info.preamble.name}")
            if table.info.size and self.engine.entry_count(table.engine_table) >= table.info.size:
                # PI answers UNKNOWN ("Error when adding match entry to target"), not the
                # RESOURCE_EXHAUSTED of the P4Runtime spec: the differential tests compare codes
                raise P4RTError(
                    grpc.StatusCode.UNKNOWN, f"table {table.info.preamble.name} is full ({table.info.size})"
                )
            self.engine.insert_entry(
                table.engine_table, list(key), rank, engine_action, list(params),
                te.priority, action_id, te.metadata, te.controller_metadata,
            )  # fmt: skip
        elif utype == Update.MODIFY:
            if handle is None:
                raise not_found(f"no such entry in {table.info.preamble.name}")
            self.engine.modify_entry(
                table.engine_table, handle, engine_action, list(params), action_id, te.metadata, te.controller_metadata
            )
        else:
            raise invalid("unspecified update type")

    def _write_indirect(
        self, table: Table, utype: int, te: p4runtime_pb2.TableEntry, key: Key, rank: int, handle: int | None
    ) -> None:
        """An entry of an indirect table: it names a member or group of the table's profile
        (PI checks that, INVALID_ARGUMENT, before whether the entry exists)."""
        name = table.info.preamble.name
        which = te.action.WhichOneof("type")
        if which is None:
            raise invalid("'action' field must be set")
        if which == "action":
            raise invalid(f"cannot provide a direct action for the indirect table {name}")
        kind, target, ref = self.profiles.resolve(table.info.implementation_id, te.action)
        # The target's refusals (an empty group, a full table, a table keyed by selector
        # fields only) are PI's UNKNOWN; the engine counts references as BMv2 does then.
        if utype == Update.INSERT:
            if handle is not None:
                raise P4RTError(grpc.StatusCode.ALREADY_EXISTS, f"entry already exists in {name}")
            try:
                self.engine.insert_indirect(
                    table.engine_table, list(key), rank, kind, target,
                    te.priority, ref, te.metadata, te.controller_metadata,
                )  # fmt: skip
            except ValueError as e:
                raise target_error(f"error when adding match entry to {name}: {e}") from None
        elif utype == Update.MODIFY:
            if handle is None:
                raise not_found(f"no such entry in {name}")
            try:
                self.engine.modify_indirect(
                    table.engine_table, handle, kind, target, ref, te.metadata, te.controller_metadata
                )
            except ValueError as e:
                raise target_error(f"error when modifying match entry in {name}: {e}") from None
        else:
            raise invalid("unspecified update type")

    def _write_default(self, table: Table, utype: int, te: p4runtime_pb2.TableEntry) -> None:
        if table.info.implementation_id:
            raise invalid(f"cannot set / reset the default action of the indirect table {table.info.preamble.name}")
        if te.match or te.priority:
            raise invalid("a default entry has no match and no priority")
        if utype != Update.MODIFY:
            raise invalid("the default entry can only be modified")
        if table.info.const_default_action_id:
            raise P4RTError(
                grpc.StatusCode.PERMISSION_DENIED,
                f"the default action of {table.info.preamble.name} is const",
            )
        if te.HasField("action"):
            action_id, params = self._action(table, te.action.action, True)
        else:
            action_id, params = self.initial_defaults.get(table.info.preamble.id, (0, ()))
        if action_id:
            self.engine.set_default(table.engine_table, table.engine_actions[action_id], list(params))
        else:  # no default in the P4Info: the program's own (p4c's JSON)
            ai, ps, _ = self.engine.initial_default(table.engine_table)
            self.engine.set_default(table.engine_table, ai, ps)
        table.default_action_id, table.default_params = action_id, params

    # ---- reads ------------------------------------------------------------------

    def to_proto(self, table: Table, e: Entry) -> p4runtime_pb2.TableEntry:
        te = p4runtime_pb2.TableEntry(
            table_id=table.info.preamble.id,
            priority=e.priority,
            metadata=e.metadata,
            controller_metadata=e.controller_metadata,
        )
        for f, (value, mask) in zip(table.fields, e.key, strict=True):
            if (mask == 0 and f.match_type != MF.RANGE) or (
                f.match_type == MF.RANGE and (value, mask) == (0, (1 << f.bitwidth) - 1)
            ):
                continue
            m = te.match.add(field_id=f.id)
            if f.match_type == MF.EXACT:
                m.exact.value = encode(value)
            elif f.match_type == MF.TERNARY:
                m.ternary.value, m.ternary.mask = encode(value), encode(mask)
            elif f.match_type == MF.RANGE:
                m.range.low, m.range.high = encode(value), encode(mask)
            elif f.match_type == MF.OPTIONAL:
                m.optional.value = encode(value)
            else:
                m.lpm.value, m.lpm.prefix_len = encode(value), bin(mask).count("1")
        if table.info.implementation_id:  # params: (kind, BMv2 handle); action_id: the P4Runtime id
            if e.params[0] == MEMBER:
                te.action.action_profile_member_id = e.action_id
            else:
                te.action.action_profile_group_id = e.action_id
        else:
            self._set_action(te.action.action, e.action_id, e.params)
        return te

    def _set_action(self, msg: p4runtime_pb2.Action, action_id: int, params: tuple[int, ...]) -> None:
        msg.action_id = action_id
        for spec, v in zip(self.index.actions[action_id].params, params, strict=True):
            msg.params.add(param_id=spec.id, value=encode(v))

    def read(self, te: p4runtime_pb2.TableEntry) -> list[tuple[Table, Entry | None]]:
        """Entries a read request selects; (table, None) stands for a default entry."""
        tables = [self.table(te.table_id)] if te.table_id else list(self.tables.values())
        out: list[tuple[Table, Entry | None]] = []
        for table in tables:
            if te.is_default_action:
                out.append((table, None))
            elif te.match:
                e = self.find(table, self._key(table, te), te.priority)
                if e is not None:
                    out.append((table, e))
            else:
                out.extend((table, Entry.of(v)) for v in self.engine.entries(table.engine_table))
        return out

    def default_proto(self, table: Table) -> p4runtime_pb2.TableEntry:
        te = p4runtime_pb2.TableEntry(table_id=table.info.preamble.id, is_default_action=True)
        if table.default_action_id:
            self._set_action(te.action.action, table.default_action_id, table.default_params)
        return te
