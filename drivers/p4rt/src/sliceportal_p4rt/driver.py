"""The p4rt driver: slicing.p4 on BMv2 / the bundled target over P4Runtime.

Options (the Backend record's mapping; all optional, unknown keys refused):
  address "127.0.0.1:9559" (host:port), device_id 1, election_id 1, set_pipeline true,
  lanes 8 (queues simple_switch_grpc was started with via --priority-queues), batch_size
  500, qos_mode "vqueue" | "meter", access_ports {port: vid}, trunk_ports [..],
  uplink_port, owner "sliceportal"; the transport: plaintext, tls_ca_cert, tls_client_cert,
  tls_client_key_secret, tls_server_name (tls.py: TLS / mutual TLS, PEM text, never paths).

The program is not an option: the driver pushes p4c's compilation of slicing.p4 that ships
with it (dataplane/bmv2/compiled/, the P4Info and the BMv2 JSON) with
SetForwardingPipelineConfig, so no option names a file on the server.

It owns only the entries it wrote: each carries ``metadata = owner tag``, reads keep only
those, and nothing else is ever modified or deleted.
"""

from __future__ import annotations

import gc
import operator
import secrets
import threading
import time
from collections import OrderedDict
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Annotated, Any, ClassVar, TypeVar

import grpc
from google.rpc import code_pb2
from p4.v1 import p4runtime_pb2
from pydantic import AfterValidator, ConfigDict, Field, ValidationError

from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    Counters,
    DataPlaneState,
    DriverError,
    Health,
    NativeEntry,
    NativePlan,
    OptionsError,
    ProgressCallback,
    ProgressEvent,
    PushError,
    TableUsage,
    TernaryView,
    UnreachableError,
    check_fits,
)
from sliceportal.rules.ir import RuleIR

from . import telemetry, wire
from .client import WRITE_FLOOR, ElectionIdInUse, Session, WriteCall, WriteFailed, read_once
from .codec import Encoded, EntryCodec, Op
from .counters import read_counters
from .lowering import MatchKey, PortPlan, lower_ir, match_key, with_full_masks
from .p4info import (
    CLASSIFIER,
    PORT_TENANT,
    SLICE_METER,
    SLICE_QOS,
    VLAN_TENANT,
    VQUEUE_REGISTERS,
    P4Info,
    shipped_program,
)
from .tls import TlsOptions
from .view import classifier_view

Update = p4runtime_pb2.Update
Tables = Mapping[str, Sequence[NativeEntry]]


@contextmanager
def _collector_paused() -> Iterator[None]:
    """The cyclic garbage collector off for the push's hot loops: they allocate a tuple or
    bytes per entry (no cycles), and each generation-2 pass they would trigger walks the whole
    plan (measured: a quarter of a 4000-entry push's Python time)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


T = TypeVar("T")
MATCH_FIELDS = frozenset({"vni", "teid", "src_ip", "dst_ip", "dst_port", "dscp", "vlan"})


def _host_port(value: str) -> str:
    """``host:port`` (``[v6]:port`` for IPv6) as gRPC takes it; nothing path- or URL-like."""
    host, sep, port = value.rpartition(":")
    if not sep or not port.isdigit() or not 0 < int(port) < 65536:
        raise ValueError("must be host:port with a port 1-65535, e.g. 127.0.0.1:9559")
    bare = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    if not bare or not all(c.isalnum() or c in ".-_:" for c in bare) or (":" in bare and bare == host):
        raise ValueError("the host must be a name or an IP address (IPv6 in brackets), e.g. 127.0.0.1:9559")
    return value


Port = Annotated[int, Field(ge=0, lt=1 << 9)]
Vid = Annotated[int, Field(ge=0, le=4095)]


# Lowerings shared by the drivers of this process (``Driver._lowering``), newest last; and the
# plans made of them with their wire bytes, per owner tag (``Driver.lower``).
_LOWERINGS: OrderedDict[tuple[Any, ...], tuple[dict[tuple[MatchKey, int], int], Tables]] = OrderedDict()
_PLANS: OrderedDict[tuple[Any, ...], tuple[NativePlan, Encoded]] = OrderedDict()
_LOWERINGS_KEPT = 32
_LOWERINGS_LOCK = threading.Lock()


def _shared(cache: OrderedDict[tuple[Any, ...], Any], key: tuple[Any, ...]) -> Any:
    """What ``cache`` holds under ``key`` (now its newest), or None."""
    with _LOWERINGS_LOCK:
        found = cache.get(key)
        if found is not None:
            cache.move_to_end(key)
        return found


def _share(cache: OrderedDict[tuple[Any, ...], Any], key: tuple[Any, ...], value: Any) -> None:
    """Keep ``value`` under ``key``, the oldest going beyond ``_LOWERINGS_KEPT``."""
    with _LOWERINGS_LOCK:
        cache[key] = value
        while len(cache) > _LOWERINGS_KEPT:
            cache.popitem(last=False)


class Options(TlsOptions):
    model_config = ConfigDict(extra="forbid")

    address: Annotated[str, AfterValidator(_host_port)] = "127.0.0.1:9559"
    # Every number bounded (#27): P4Runtime's device_id is a uint64, v1model ports 9 bits, VLAN
    # ids 12; an unbounded value passed validation and failed later (protobuf, grpc timers).
    device_id: int = Field(1, ge=0, lt=1 << 64)
    election_id: int = Field(1, ge=1, lt=1 << 128)
    set_pipeline: bool = True
    lanes: int = Field(8, ge=1, le=8)
    batch_size: int = Field(500, ge=1, le=100_000)
    qos_mode: str = Field("vqueue", pattern="^(vqueue|meter)$")
    access_ports: dict[Port, Vid] = Field(default_factory=dict, max_length=512)
    trunk_ports: list[Port] = Field(default_factory=lambda: [1, 2], max_length=512)
    uplink_port: Port | None = 2
    owner: str = Field("sliceportal", min_length=1, max_length=64)
    timeout_s: float = Field(10.0, gt=0, le=300, allow_inf_nan=False)


class Driver:
    name: ClassVar[str] = "p4rt"

    def __init__(self, options: Mapping[str, Any]) -> None:
        try:
            self.opts = Options.model_validate(dict(options))
        except ValidationError as e:
            raise OptionsError.from_validation(
                "p4rt",
                e,
                unknown="unknown option (the program is the p4c build shipped with the driver; no option names a file)",
            ) from None
        try:
            self.program = shipped_program()
        except (OSError, ValueError) as e:
            raise DriverError(f"cannot load the compiled slicing.p4: {e}") from None
        self.p4info = P4Info(self.program.p4info)
        if self.opts.lanes & (self.opts.lanes - 1):
            raise DriverError(f"lanes must be a power of two, got {self.opts.lanes}")
        self.tag = self.opts.owner.encode()
        self.codec = EntryCodec(self.p4info, self.tag)
        self.widths = self.codec.widths
        self.sizes = {t.preamble.name: int(t.size) for t in self.p4info.proto.tables}
        self.sizes[SLICE_METER] = int(self.p4info.meter(SLICE_METER).size)
        self.sizes["slices"] = self.sizes[SLICE_METER]
        self._session: Session | None = None
        # The version the switch was last seen (read or written) to hold: for health().
        self._version: str | None = None
        # What the switch holds of ours, as last read or written through ``_held_by`` in its
        # primary term ``_held_term``: valid while that term lasts (no one else can have
        # written), so a push diffs against it instead of reading the whole table back.
        # read_state() refreshes it.
        self._held: dict[str, list[NativeEntry]] | None = None
        self._held_by: Session | None = None
        self._held_term = -1
        # Of each version's last lowering: (match, priority) -> IR rule index, and its tables
        # (what read_state recognises a version by); the plan last applied, lowered here or not.
        self._lowered: dict[str, tuple[dict[tuple[MatchKey, int], int], Tables]] = {}
        self._applied: tuple[str, Tables] | None = None
        self._rule_of: dict[tuple[MatchKey, int], int] = {}
        self._registers_writable = True

    # ---- pure --------------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        return Capabilities(
            driver=self.name,
            lanes=self.opts.lanes,
            paths=1,
            match_fields=MATCH_FIELDS,
            capacity={CLASSIFIER: self.sizes[CLASSIFIER], SLICE_QOS: self.sizes[SLICE_QOS]},
            rate_limit=True,
            ecn=self.opts.qos_mode == "vqueue",
        )

    def lower(self, ir: RuleIR) -> NativePlan:
        """The IR's entries; classifier priorities stay those the switch holds where the
        entry's rank allows (lowering.assign_priorities), so the plan differs from what is
        there by the rule-set change only. Known from the last push or read through the open
        session (one read if connected and not yet known); unconnected, a fresh numbering."""
        check_fits(ir, self.capabilities())
        priorities, tenant_ids = self._hints()
        version = ir.digest()
        key, (rule_of, tables) = self._lowering(ir, priorities, tenant_ids)
        self._lowered.pop(version, None)  # the newest lowering last: the first to go is the oldest
        self._lowered[version] = (rule_of, tables)
        while len(self._lowered) > 8:  # previews of versions never pushed
            del self._lowered[next(iter(self._lowered))]
        # the plan and its wire bytes, made once for every switch of the same lowering and owner
        # tag (the P4Info is the shipped program's), not validated and encoded again for each
        # switch of a fleet (one plan object for all; no deploy time measurably saved: docs/scale.md)
        shared_key = (*key, self.tag)
        shared: tuple[NativePlan, Encoded] | None = _shared(_PLANS, shared_key)
        if shared is None:
            usage = {
                name: TableUsage(used=sum(1 for e in lst if not e.get("default")), capacity=self.sizes[name])
                for name, lst in tables.items()
            }
            plan = NativePlan(driver=self.name, version=version, tables=tables, usage=usage)
            with _collector_paused():
                encoded = self.codec.encode_plan(plan.tables)  # the plan's own entries: validation copied ``tables``
            shared = (plan, encoded)
            _share(_PLANS, shared_key, shared)
        self.codec.adopt(shared[1])
        return shared[0]

    def _lowering(
        self, ir: RuleIR, priorities: dict[MatchKey, int], tenant_ids: dict[int, int]
    ) -> tuple[tuple[Any, ...], tuple[dict[tuple[MatchKey, int], int], Tables]]:
        """``lower_ir`` of ``ir`` for this switch, or the same lowering another driver of this
        process made for the same IR, options, program and hints: a slice deployed to a fleet
        lowers once for all switches that hold the same (fresh ones hold nothing), not once
        per switch (bench scale_backends). Shared read-only: nothing changes a lowering's
        entries or its rule map in place. With the key it is shared under."""
        o = self.opts
        key = (
            ir.digest(),
            tuple(sorted(o.access_ports.items())),
            tuple(o.trunk_ports),
            o.uplink_port,
            o.qos_mode,
            o.lanes,
            tuple(sorted(self.sizes.items())),
            tuple(sorted((t, tuple(sorted(w.items()))) for t, w in self.widths.items())),
            frozenset(priorities.items()),
            frozenset(tenant_ids.items()),
        )
        found: tuple[dict[tuple[MatchKey, int], int], Tables] | None = _shared(_LOWERINGS, key)
        if found is not None:
            return key, found
        rule_of: dict[tuple[MatchKey, int], int] = {}
        ports = PortPlan(dict(o.access_ports), tuple(o.trunk_ports), o.uplink_port)
        tables = with_full_masks(
            lower_ir(ir, ports, o.qos_mode, o.lanes, self.sizes, priorities, rule_of, tenant_ids), self.widths
        )
        _share(_LOWERINGS, key, (rule_of, tables))
        return key, (rule_of, tables)

    def prefetch(self) -> None:
        """Read what ``lower`` keeps from the switch now, through the open session, unless it is
        known (optional contract: LoweringPrefetcher): a fan-out's preflight reads every switch
        at once; lowering then finds it held. A failure is left to ``lower`` to meet again."""
        s = self._session
        if s is None or self._held_valid():
            return
        try:
            self._read_tables(s)
        except grpc.RpcError:
            return

    def _hints(self) -> tuple[dict[MatchKey, int], dict[int, int]]:
        """What lowering keeps from the switch: classifier priorities (match -> priority) and
        tenant ids (VLAN ID -> id)."""
        held = self._held if self._held_valid() else None
        try:
            if held is None and self._session is not None:
                held = self._read_tables(self._session)
            elif held is None:
                # Not connected (a fresh process, the plan previewed before any push): one
                # read without joining, failing fast when nothing answers -- the switch may
                # hold what another portal process pushed, with priorities to keep.
                held = self.codec.tables_of(
                    read_once(
                        self.opts.address,
                        self.opts.device_id,
                        self.codec.read_request(),
                        min(self.opts.timeout_s, 1.0),
                        self.opts.tls(),
                    )
                )
        except grpc.RpcError:
            held = None
        held = held or {}
        priorities = {match_key(e): e["priority"] for e in held.get(CLASSIFIER, []) if not e.get("default")}
        tenants = {int(e["match"]["vid"][0]): int(e["params"]["tenant_id"]) for e in held.get(VLAN_TENANT, [])}
        tenants |= {
            int(e["params"]["vid"]): int(e["params"]["tenant_id"])
            for e in held.get(PORT_TENANT, [])
            if "vid" in e.get("params", {})
        }
        return priorities, tenants

    def _held_valid(self) -> bool:
        s = self._session
        return (
            self._held is not None and s is not None and self._held_by is s and s.primary and self._held_term == s.term
        )

    def ternary_view(self, plan: NativePlan) -> TernaryView:
        """The plan's classifier entries as P4Runtime matches them (optional contract: TernaryViewer)."""
        return classifier_view(plan, self.widths[CLASSIFIER])

    # ---- session -----------------------------------------------------------------------

    def _connect(self) -> Session:
        if self._session is not None:
            return self._session
        try:
            s = Session(
                self.opts.address, self.opts.device_id, self.opts.election_id, self.opts.timeout_s, self.opts.tls()
            )
        except ElectionIdInUse:
            # another portal process joined with the same option: join as a backup with an id
            # of our own, below every writer's (client.WRITE_FLOOR)
            s = Session(
                self.opts.address,
                self.opts.device_id,
                2 + secrets.randbelow(WRITE_FLOOR - 2),
                self.opts.timeout_s,
                self.opts.tls(),
            )
        try:
            if self.opts.set_pipeline and s.get_p4info() != self.p4info.proto:
                # Only when the switch runs another program: a new pipeline wipes all state,
                # including other controllers' entries.
                s.ensure_primary()
                # a new cookie: the counters' epoch (telemetry.py), so a reload is seen as one
                s.set_pipeline(self.p4info.proto, self.program.device_config, cookie=telemetry.new_cookie())
                self._version = None
                self._held = self._held_by = None
        except (grpc.RpcError, OSError, DriverError) as e:
            s.close()
            raise UnreachableError(f"cannot set the forwarding pipeline: {e}") from None
        self._session = s
        return s

    def _writer(self) -> Session:
        """The session, made primary (the caller holds the backend's lock: ours to write
        now); joined again first if its stream ended. Reads keep a session whose stream
        ended: they fail fast on their own when the switch is gone (health probes rely on it)."""
        s = self._connect()
        if not s.alive:
            self._drop_session()
            s = self._connect()
        s.ensure_primary()
        return s

    def _drop_session(self) -> None:
        self._held = self._held_by = None
        if self._session is not None:
            self._session.close()
            self._session = None

    def close(self) -> None:
        self._drop_session()

    # ---- entries <-> protobuf -----------------------------------------------------------

    # ---- read ----------------------------------------------------------------------------

    def _read_tables(self, s: Session) -> dict[str, list[NativeEntry]]:
        term = s.term  # taken before the read: a term that begins during it does not cover it
        tables = self.codec.tables_of(s.read(self.codec.read_request()))
        self._held, self._held_by, self._held_term = {k: list(v) for k, v in tables.items()}, s, term
        return tables

    def read_state(self) -> DataPlaneState:
        """What the switch holds of ours, and its version as a fact of the switch: the version
        of a plan this driver lowered or applied whose tables are exactly what was read (so
        another process's push, or this process's restart, is seen as it is); None when
        empty or when no plan known here matches."""
        try:
            tables = self._read_tables(self._connect())
        except grpc.RpcError as e:
            self._drop_session()
            raise UnreachableError(f"reading the switch failed: {e.code().name}") from None
        self._version = self._version_of(tables)
        if self._version is not None and self._version in self._lowered:
            self._rule_of = self._lowered[self._version][0]  # counters() map rules of what is there
        # not validated again: the codec made these entries (validating copied every one of them,
        # twice a push)
        return DataPlaneState.model_construct(version=self._version, tables=tables)

    def _version_of(self, tables: Tables) -> str | None:
        if not any(tables.values()):
            return None
        known = [(v, t) for v, (_, t) in reversed(self._lowered.items())]
        if self._applied is not None:
            known.insert(0, self._applied)
        for version, plan in known:
            # both sides in entry_sort_key order (lowering and _tables_of sort): a list compare
            if all(list(tables.get(n, ())) == list(plan.get(n, ())) for n in set(tables) | set(plan)):
                return version
        return None

    # ---- apply ---------------------------------------------------------------------------

    def _diff(
        self, have: dict[str, list[NativeEntry]], want: dict[str, list[NativeEntry]]
    ) -> tuple[list[Op], list[str]]:
        """The updates from ``have`` to ``want``, make-before-break: inserts by falling
        priority, then modifies (default actions, meters, changed actions), then deletes by
        rising priority. At every step each packet then meets its old or its new verdict:
        an inserted entry that wins is the new winner (every new entry above it is in), a
        deleted one goes only after those below it, so the next winner is a new entry.
        The tenant bindings (port / VLAN ID -> tenant) are the door: they open last (after
        the tenant's classifier, queue and forwarding entries are in) and close first (before
        those go), so no packet gets a tenant whose entries are half there.
        Returns (updates, tables that needed room first: there, some deletes go first)."""

        early: list[tuple[int, Op]] = []  # deletes that make room, before the inserts
        inserts: list[tuple[tuple[bool, int], Op]] = []
        modifies: list[Op] = []
        deletes: list[tuple[tuple[bool, int], Op]] = []
        crowded: list[str] = []
        for table in sorted(set(have) | set(want)):
            door = table in (PORT_TENANT, VLAN_TENANT)
            if not have.get(table):
                # into an empty table everything is new: no identities to compare (a fresh
                # push); an entry without a match is a default action or a meter cell
                entries = want.get(table, [])
                modifies += [(Update.MODIFY, table, e, None) for e in entries if "match" not in e]
                plain = [e for e in entries if "match" in e]
                if len(plain) > self.sizes.get(table, len(plain)):
                    crowded.append(table)  # nothing to free: the switch refuses the excess
                inserts += [((door, -e["priority"]), (Update.INSERT, table, e, None)) for e in plain]
                continue
            old = {self.codec.ident_of(e): e for e in have.get(table, [])}
            new = {self.codec.ident_of(e): e for e in want.get(table, [])}
            added = []
            for k, e in new.items():
                if k not in old:
                    if e.get("default") or "index" in e:
                        modifies.append((Update.MODIFY, table, e, k))
                    else:
                        added.append((k, e))
                elif old[k] != e:
                    modifies.append((Update.MODIFY, table, e, k))
            gone = sorted((e for k, e in old.items() if k not in new), key=lambda e: int(e.get("priority", 0)))
            held = sum(1 for e in old.values() if not e.get("default") and "index" not in e)
            room = self.sizes.get(table, held + len(added)) - held
            if len(added) > room:  # a full table: free what must be freed first
                crowded.append(table)
                take = [e for e in gone if not e.get("default") and "index" not in e][: len(added) - room]
                early += [(0, (Update.DELETE, table, e, None)) for e in take]
                gone = [e for e in gone if all(e is not t for t in take)]
            inserts += [((door, -int(e["priority"])), (Update.INSERT, table, e, k)) for k, e in added]
            deletes += [((not door, int(e.get("priority", 0))), (Update.DELETE, table, e, None)) for e in gone]
        inserts.sort(key=operator.itemgetter(0))
        deletes.sort(key=operator.itemgetter(0))
        modifies.sort(key=lambda op: op[1] in (PORT_TENANT, VLAN_TENANT))  # stable: the door's last
        return [u for _, u in early] + [u for _, u in inserts] + modifies + [u for _, u in deletes], crowded

    def _register_resets(self, plan: NativePlan, have: dict[str, list[NativeEntry]]) -> list[p4runtime_pb2.Update]:
        """Zero the vQueue registers of slices whose queue parameters change."""
        old = {e["match"]["slice_id"][0]: e for e in have.get(SLICE_QOS, [])}
        out = []
        for e in plan.tables.get(SLICE_QOS, []):
            sid = e["match"]["slice_id"][0]
            if old.get(sid) == e:
                continue
            for reg in VQUEUE_REGISTERS:
                u = Update(type=Update.MODIFY)
                r = u.entity.register_entry
                r.register_id = self.p4info.register(reg).preamble.id
                r.index.index = sid
                r.data.bitstring = b"\x00"
                out.append(u)
        return out

    def _write_all(
        self, s: Session, updates: Sequence[T], frame: Callable[[T], bytes], phase: str, progress: ProgressCallback
    ) -> None:
        """Batches of ``batch_size`` in order, pipelined: the next batch is framed (each update
        as the request's ``updates`` field, joined) while the switch applies the one before;
        it is sent only once that one succeeded (and its progress was reported), so batches
        never overtake and a failure stops the push."""
        n = self.opts.batch_size
        sent: WriteCall | None = None
        for i in range(0, len(updates), n):
            batch = b"".join([frame(u) for u in updates[i : i + n]])
            if sent is not None:
                sent.result()
                progress(ProgressEvent(phase=phase, done=i, total=len(updates)))
            sent = s.write_fields_async(batch)
        if sent is not None:
            sent.result()
            progress(ProgressEvent(phase=phase, done=len(updates), total=len(updates)))

    @staticmethod
    def _counts(updates: Sequence[Op]) -> dict[int, int]:
        """How many updates of each type are written (``_kind``, without a call per op): an
        op on an entry with no match (a default action, a meter cell) is written as MODIFY."""
        kinds = [Update.MODIFY if "match" not in e else t for t, _, e, _ in updates]
        return {k: kinds.count(k) for k in (Update.INSERT, Update.DELETE, Update.MODIFY)}

    @staticmethod
    def _kind(op: Op) -> int:
        """The Update type written: a default action or a meter cell is always MODIFY."""
        utype, table, e, _ = op
        return Update.MODIFY if table == SLICE_METER or e.get("default") else utype

    def _reset_registers(self, s: Session, resets: list[p4runtime_pb2.Update], progress: ProgressCallback) -> None:
        """Best effort: BMv2's PI answers every register write UNIMPLEMENTED ("Register
        writes are not supported yet"). The vQueue needs no reset to be correct (a stale
        ``slice_ts`` drains the backlog to zero on the next packet); only the
        ``slice_delay_max`` statistic then carries over, so such a target is written no more."""
        if not resets or not self._registers_writable:
            return
        try:
            self._write_all(s, resets, lambda u: wire.update_field(u.SerializeToString()), "write", progress)
        except WriteFailed as e:
            if e.errors and all(err.code == code_pb2.UNIMPLEMENTED for err in e.errors):
                self._registers_writable = False
                return
            raise

    def apply(self, plan: NativePlan, progress: ProgressCallback) -> ApplyResult:
        if plan.driver != self.name:
            raise DriverError(f"plan was lowered by {plan.driver!r}, not {self.name!r}")
        started = time.monotonic()
        try:
            s = self._writer()
        except (grpc.RpcError, WriteFailed) as e:
            self._drop_session()
            raise UnreachableError(f"becoming the primary controller failed: {e}") from None
        except DriverError:
            self._drop_session()
            raise
        if self._held_valid():
            assert self._held is not None
            before = self._held
        else:
            try:
                before = self._read_tables(s)
            except grpc.RpcError as e:
                self._drop_session()
                raise UnreachableError(f"reading the switch failed: {e.code().name}") from None
        with _collector_paused():
            updates, crowded = self._diff(before, plan.tables)
        note = f"full tables {crowded}: deletes before inserts there, not hitless" if crowded else ""
        progress(ProgressEvent(phase="diff", done=0, total=len(updates), message=note))
        counts = self._counts(updates)
        try:
            with _collector_paused():
                self._write_all(s, updates, self.codec.frame, "write", progress)
            self._held = None  # the registers' reset may fail: the tables are known again below
            self._reset_registers(s, self._register_resets(plan, before), progress)
        except WriteFailed as e:
            self._held = None
            reason = e.errors[0].message if e.errors else e.message
            self._rollback(before, progress, reason)
        self._held, self._held_by, self._held_term = {k: list(v) for k, v in plan.tables.items()}, s, s.term
        lowered = self._lowered.get(plan.version)
        self._rule_of = lowered[0] if lowered else {}
        self._applied = (plan.version, plan.tables)
        self._version = plan.version
        progress(ProgressEvent(phase="commit", done=len(updates), total=len(updates)))
        return ApplyResult(
            version=plan.version,
            added=counts[Update.INSERT],
            removed=counts[Update.DELETE],
            modified=counts[Update.MODIFY],
            duration_s=time.monotonic() - started,
        )

    def _rollback(self, before: dict[str, list[NativeEntry]], progress: ProgressCallback, reason: str) -> None:
        try:
            s = self._writer()  # may have been outbid: the push failed PERMISSION_DENIED
            now = self._read_tables(s)  # a failed batch may have applied part of itself
            undo, _ = self._diff(now, before)
            progress(ProgressEvent(phase="rollback", done=0, total=len(undo), message=reason))
            self._write_all(s, undo, self.codec.frame, "rollback", progress)
            self._held, self._held_by, self._held_term = {k: list(v) for k, v in before.items()}, s, s.term
        except (WriteFailed, grpc.RpcError, UnreachableError, DriverError) as e:
            self._drop_session()
            raise PushError(
                f"push failed ({reason}) and so did the rollback ({e})",
                rolled_back=False,
                hint="the switch holds a partial rule set; reconcile once it answers",
            ) from None
        raise PushError(f"push failed and was rolled back: {reason}", rolled_back=True)

    # ---- counters / health -----------------------------------------------------------------

    def counters(self) -> Counters:
        s = self._connect()
        try:
            return read_counters(s, self.codec, self._rule_of, self.opts.qos_mode, self.opts.lanes)
        except grpc.RpcError as e:
            self._drop_session()
            raise UnreachableError(f"reading counters failed: {e.code().name}") from None

    def health(self) -> Health:
        try:
            s = self._connect()
            info = s.get_p4info()
        except (DriverError, grpc.RpcError) as e:
            self._drop_session()
            return Health(ok=False, detail=str(e))
        if info != self.p4info.proto:
            return Health(ok=False, detail="the switch runs another P4 program", version=None)
        role = "primary" if s.primary else "backup"  # a backup until its next push (other processes write)
        return Health(
            ok=True,
            detail=f"{role} controller of device {self.opts.device_id} at {self.opts.address}",
            version=self._version,
        )
