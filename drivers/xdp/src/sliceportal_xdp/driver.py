"""The ``xdp`` driver plugin: the seed 001 XDP data plane behind the driver contract.

Lifecycle: construction only validates options (``capabilities`` and ``lower`` are pure
and need no privileges); the first call that needs the kernel loads the object, writes
the steering configuration and attaches it to ``options.interface``. A push fills the
idle table copy, reads it back, then flips ``config.active``: packets see the old or the
new version, never a mixture. See docs/xdp.md.
"""

from __future__ import annotations

import dataclasses
import errno
import os
import subprocess
import threading
import time
from collections import defaultdict
from collections.abc import Mapping
from pathlib import Path
from typing import Any, ClassVar

from pydantic import ValidationError

from sliceportal.drivers.contract import (
    ApplyResult,
    Capabilities,
    Counters,
    DataPlaneState,
    DriverError,
    Health,
    LaneCounters,
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

from . import image, libbpf, overload, pins, positions
from . import layout as L
from .agent_client import AgentClient
from .dataplane import Counter, DataPlane, LastDecision, RawCounters
from .libbpf import BpfError, TestRun
from .lowering import lower_tables, usage_counts
from .netns import if_index, if_mac, netns
from .options import XdpOptions
from .positions import Signature
from .view import xdp_view

MATCH_FIELDS = frozenset({"src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan"})
TABLES = ("src_ip", "dst_ip", "dst_port", "dscp", "vni", "teid", "vlan", "special", "actions", "qos", "meta")


def find_object() -> Path:
    """The built object: $SLICEPORTAL_XDP_OBJECT, else dataplane/xdp/build in the repo
    (built on demand with make when the sources are there)."""
    env = os.environ.get("SLICEPORTAL_XDP_OBJECT")
    if env:
        return Path(env)
    for parent in Path(__file__).resolve().parents:
        src = parent / "dataplane" / "xdp"
        if (src / "Makefile").exists():
            obj = src / "build" / "sliceportal.bpf.o"
            if not obj.exists():
                subprocess.run(["make", "-C", str(src), "all"], check=True, capture_output=True)
            return obj
    raise DriverError("sliceportal.bpf.o not found", hint="run make -C dataplane/xdp or set SLICEPORTAL_XDP_OBJECT")


def _lane_counters(c: Counter | None) -> LaneCounters:
    if c is None:
        return LaneCounters()
    drops = {"rate_limit": c.drop_rate} if c.drop_rate else {}
    return LaneCounters(packets=c.packets, bytes=c.bytes, drops=drops, ecn_marks=c.ecn, alt_forwarded=c.alt)


def _slice_lanes(raw: RawCounters, targets: Mapping[int, tuple[int, int]]) -> dict[str, LaneCounters]:
    """Per IR slice x lane ("slice/lane"): what the live rules of that slice and lane
    counted (entered, rate-limit drops, ECN marks, sent to the alternative node). A slice
    whose rules all lead to one lane takes the slice's own counter (kept by slice id, so it
    stays monotonic when a push moves rules between positions); otherwise the rules'
    position counters are added up (a push that moves or re-uses a position can lower
    such a sum once, which the KPI collector treats as a restart).

    The program counts no packets leaving towards the lane's device and measures no
    queueing delay (XDP sees a frame once, before any queue): ``tx_*`` and ``delay`` stay
    None, "not measured by this data plane" (docs/xdp.md)."""
    by_slice: dict[int, set[int]] = defaultdict(set)
    for sid, lane in targets.values():
        if sid:
            by_slice[sid].add(lane)
    sums: dict[tuple[int, int], Counter] = {}
    for pos, (sid, lane) in targets.items():
        if not sid:
            continue
        c, acc = raw.rules.get(pos), sums.setdefault((sid, lane), Counter())
        if c is not None:
            for f in dataclasses.fields(Counter):
                setattr(acc, f.name, getattr(acc, f.name) + getattr(c, f.name))
    out = {}
    for (sid, lane), c in sorted(sums.items()):
        own = raw.slices.get(sid) if len(by_slice[sid]) == 1 else None
        out[f"{sid}/{lane}"] = _lane_counters(own if own is not None else c)
    return out


class Driver:
    name: ClassVar[str] = "xdp"

    def __init__(self, options: Mapping[str, Any]) -> None:
        try:
            self.options = XdpOptions.model_validate(dict(options))
        except ValidationError as e:
            raise OptionsError.from_validation("xdp", e) from None
        self._dp: DataPlane | None = None
        self._ifindex: int | None = None
        self._peer: tuple[str | None, int] | None = None
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._poller: threading.Thread | None = None
        self._manual_overload = False
        self._last_slices: set[int] = set()
        self._fail_after: int | None = None
        # the version and tables of the last plan pushed: the positions lowering keeps
        self._applied: tuple[str, dict[str, list[NativeEntry]]] | None = None
        # address: every kernel-side call goes to the agent (which runs this same class)
        self._agent = AgentClient.from_options(self.options) if self.options.address else None

    @property
    def pin_dir(self) -> str | None:
        return pins.pin_dir(self.options.pin_name) if self.options.pin_name else None

    # ---- pure -------------------------------------------------------------------------

    def capabilities(self) -> Capabilities:
        if self._agent is not None:
            return self._agent.capabilities()
        return Capabilities(
            driver=self.name,
            lanes=self.options.lanes,
            paths=self.options.paths,
            match_fields=MATCH_FIELDS,
            capacity=self.options.table_capacity(),
            rate_limit=True,
            ecn=True,  # seed 004 step marking by the slice's virtual queue (rate limited slices)
        )

    def lower(self, ir: RuleIR) -> NativePlan:
        """The IR's tables, each rule at the position the live copy holds it at where its
        rank allows (``positions``), so the plan differs from the live tables by the
        rule-set change only. Without a data plane to read (not loaded, nothing pinned):
        a fresh numbering."""
        caps = self.capabilities()
        check_fits(ir, caps)
        version = ir.digest()
        tables = lower_tables(ir, version, caps.capacity, self._held_positions())
        usage = {k: TableUsage(used=n, capacity=caps.capacity[k]) for k, n in usage_counts(tables).items()}
        return NativePlan(driver=self.name, version=version, tables=tables, usage=usage)

    def _held_positions(self) -> dict[Signature, list[int]]:
        """What the live copy holds (signature -> positions): from the last plan this driver
        pushed while the live copy still carries its version, else read from the maps (a
        fresh process, an agent restart, a push from elsewhere). Only a hint: a wrong one
        costs writes, never correctness (a push writes what differs from the kernel's bytes)."""
        if self._agent is not None:
            try:
                live = self._agent.agent_health().version
                if live is None:
                    return {}
                if self._applied is not None and self._applied[0] == live:
                    return positions.held(self._applied[1])
                return positions.held(self._agent.read_state().tables)
            except DriverError:
                return {}  # unreachable now: the push will say so
        with self._lock:
            try:
                if self._dp is None and not (self.pin_dir and pins.read_abi(self.pin_dir)):
                    return {}  # nothing loaded and nothing pinned: no tables to keep
                dp = self.dataplane  # pinned: taken over now, as the first push would
                v = dp.versions[dp.read_config()[0] & 1]
                m = dp.read_meta(v)
                if m is None:
                    return {}
                if self._applied is not None and self._applied[0] == m["version"]:
                    return positions.held(self._applied[1])
                return positions.held(dp.read(v))
            except (DriverError, OSError):
                return {}  # the maps cannot be read here (no privileges, another build)

    def ternary_view(self, plan: NativePlan) -> TernaryView:
        """The plan's bit-vector tables as ternary entries (optional contract: TernaryViewer)."""
        return xdp_view(plan)

    # ---- the kernel side ----------------------------------------------------------------

    @property
    def dataplane(self) -> DataPlane:
        """The loaded object (loaded, configured and attached on first use)."""
        if self._agent is not None:
            raise DriverError("this backend's data plane is driven through its agent", hint="call the driver's methods")
        with self._lock:
            if self._dp is None:
                self._dp = self._load()
            return self._dp

    def _load(self) -> DataPlane:
        o = self.options
        path = find_object()  # always the bundled build: options never name server files
        cap = o.table_capacity()
        try:
            dp = DataPlane(str(path), cap, self.pin_dir)
        except (BpfError, KeyError) as e:
            raise UnreachableError(
                f"cannot load the XDP program {path}: {e}",
                hint="needs root (CAP_BPF + CAP_NET_ADMIN) and a built object",
            ) from e
        try:
            self._configure(dp)
            if o.interface is not None:
                self._attach(dp, o.interface)
        except (OSError, DriverError) as e:
            self._detach()
            dp.close()
            if isinstance(e, DriverError):
                raise
            raise UnreachableError(
                f"cannot attach the XDP program to {o.interface}: {e}",
                hint="check the interface and namespace names",
            ) from e
        return dp

    def _configure(self, dp: DataPlane) -> None:
        """Global flags, lanes -> CPUs (cpumap entries) and the alt node."""
        o = self.options
        ncpu = os.cpu_count() or 1
        flags = (
            (L.CFG_MISS_TO_ALT if o.misses_to_alt else 0)
            | (L.CFG_RECORD_LAST if o.record_last else 0)
            | (0 if o.flow_cache else L.CFG_NO_CACHE)
        )
        if dp.adopted:
            # taken over from pins: keep the copy in force and the testbed's egress flag
            generation, held = dp.read_config()
            dp.write_config(generation, flags | (held & L.CFG_EGRESS))
            live = dp.read(dp.versions[generation & 1])
            self._last_slices = {int(a["slice_id"]) for a in live["actions"]} if live else set()
        else:
            dp.write_config(0, flags)
        for lane in range(L.MAX_LANES):
            cpu = o.lane_cpus.get(lane, lane % ncpu)
            if not 0 <= cpu < min(ncpu, L.MAX_CPUS):
                raise DriverError(f"lane {lane}: CPU {cpu} does not exist (0..{ncpu - 1})")
            if lane in o.alt_lanes:
                lane_flags = L.LANE_ALT
            elif o.steer == "cpumap":
                lane_flags = L.LANE_STEER
                if not (dp.adopted and dp.cpu_enabled(cpu, o.cpumap_qsize)):  # a new entry resets its queue
                    dp.enable_cpu(cpu, o.cpumap_qsize)
            else:
                lane_flags = 0
            if lane not in o.alt_lanes and lane in o.lane_capacity_pps:
                lane_flags |= L.LANE_CAPPED
                # a quarter of the ring stays free for the frames in flight (the cpumap
                # enqueues in bulks, and the kthread may not have drained the last ones)
                dp.set_lane_capacity(lane, cpu, o.lane_capacity_pps[lane], max(1, o.cpumap_qsize - o.cpumap_qsize // 4))
            dp.set_lane(lane, cpu, lane_flags)
        if o.alt_mac and o.alt_ip:
            # XDP_TX frames leave with the interface's own MAC as source
            src = o.src_mac or (if_mac(o.interface, o.netns) if o.interface else "02:00:00:00:00:00")
            mac = bytes.fromhex
            dp.set_alt(mac(o.alt_mac.replace(":", "")), mac(src.replace(":", "")), o.alt_ip.packed)

    def _attach(self, dp: DataPlane, interface: str) -> None:
        o = self.options
        self._ifindex = if_index(interface, o.netns)
        mode = libbpf.XDP_FLAGS_DRV_MODE if o.mode == "native" else libbpf.XDP_FLAGS_SKB_MODE
        with netns(o.netns):
            libbpf.xdp_attach(self._ifindex, dp.prog_fd, mode)
        if o.tx_peer:
            pns, _, pif = o.tx_peer.rpartition("/")
            peer = (pns or None, if_index(pif, pns or None))
            with netns(peer[0]):
                libbpf.xdp_attach(peer[1], dp.obj.program_fd("sliceportal_peer_pass"), mode)
            self._peer = peer
        if o.overload_poll_s > 0:
            self._poller = threading.Thread(target=self._poll_overload, daemon=True, name=f"xdp-overload-{interface}")
            self._poller.start()

    def apply(self, plan: NativePlan, progress: ProgressCallback) -> ApplyResult:
        if self._agent is not None:
            result = self._agent.apply(plan, progress)
            self._applied = (plan.version, plan.tables)
            return result
        t0 = time.monotonic()
        if plan.driver != self.name:
            raise DriverError(f"plan is for the {plan.driver} driver, not {self.name}")
        missing = [t for t in TABLES if t not in plan.tables]
        if missing:
            raise DriverError(f"plan lacks tables {missing}", hint="lower the IR with this driver")
        with self._lock:
            dp = self.dataplane
            generation, _ = dp.read_config()
            active = generation & 1
            try:
                want = image.encode(plan.tables)
            except (KeyError, TypeError, ValueError) as e:
                raise DriverError(f"plan tables are malformed: {e}", hint="lower the IR with this driver") from e
            # the diff against the live copy (the figures of the result): what the last
            # verified push left there, else a read of the kernel's maps
            live_v, idle = dp.versions[active], dp.versions[1 - active]
            known = dp.held[active]
            change = image.diff(known if known is not None else dp.read_image(live_v), want)
            if change.writes == 0 and known is not None and dp.mismatched(live_v, want):
                # the kernel disagrees: a hand-edited live copy must be repaired by a re-push
                change = image.diff(dp.read_image(live_v), want)
            added, removed, modified = change.added, change.removed, change.modified
            progress(ProgressEvent(phase="diff", done=1, total=1, message=f"+{added} -{removed} ~{modified} entries"))
            if change.writes == 0:
                # the live copy already holds the plan, byte for byte: nothing to write
                dp.held[active] = want
                progress(ProgressEvent(phase="commit", done=1, total=1, message=plan.version))
                self._last_slices = {int(a["slice_id"]) for a in plan.tables["actions"]}
                self._applied = (plan.version, plan.tables)
                return ApplyResult(
                    version=plan.version, added=0, removed=0, modified=0, duration_s=time.monotonic() - t0
                )
            fail_after, self._fail_after = self._fail_after, None
            base, dp.held[1 - active] = dp.held[1 - active], None  # unknown until verified

            def wrote(n: int) -> None:
                if fail_after is not None and n >= fail_after:
                    raise BpfError(errno.EIO, f"injected failure after {n} entries")
                progress(ProgressEvent(phase="write", done=n, total=max(n, total)))

            try:
                # the idle copy holds an older version (or a failed push's remains): write
                # only the slots where it differs from the plan
                work = image.diff(base if base is not None else dp.read_image(idle), want)
                total = max(1, work.writes)
                if fail_after is not None and work.writes == 0:
                    wrote(fail_after)
                dp.write_changes(idle, work, wrote)
                bad = dp.mismatched(idle, want)  # the read-back, compared as bytes
                if bad and base is not None:
                    # the copy had drifted from what we last wrote there: diff what it holds
                    work = image.diff(dp.read_image(idle), want)
                    dp.write_changes(idle, work, wrote)
                    bad = dp.mismatched(idle, want)
                progress(ProgressEvent(phase="verify", done=1, total=1))
                if bad:
                    raise PushError(f"read-back of the new tables differs in {bad}", rolled_back=True)
            except (BpfError, ValueError, KeyError, TypeError) as e:
                # the live copy was never touched: the old version is still what packets see
                progress(ProgressEvent(phase="rollback", done=1, total=1, message=str(e)))
                raise PushError(
                    f"push of {plan.version} failed while writing the idle tables: {e}",
                    rolled_back=True,
                    hint="the previous version stays active",
                ) from e
            dp.held[1 - active] = want
            dp.set_generation(generation + 1)  # the switch: one store, cannot fail half-way
            progress(ProgressEvent(phase="commit", done=1, total=1, message=plan.version))
            self._last_slices = {int(a["slice_id"]) for a in plan.tables["actions"]}
            self._applied = (plan.version, plan.tables)
        return ApplyResult(
            version=plan.version,
            added=added,
            removed=removed,
            modified=modified,
            duration_s=time.monotonic() - t0,
        )

    def read_state(self) -> DataPlaneState:
        if self._agent is not None:
            return self._agent.read_state()
        with self._lock:
            dp = self.dataplane
            generation, _ = dp.read_config()
            tables = dp.read(dp.versions[generation & 1])
        if tables is None:
            return DataPlaneState(version=None, tables={})
        return DataPlaneState(version=str(tables["meta"][0]["version"]), tables=tables)

    def raw_counters(self) -> RawCounters:
        with self._lock:
            return self.dataplane.counters()

    def counters(self) -> Counters:
        if self._agent is not None:
            return self._agent.counters()
        with self._lock:
            raw = self.raw_counters()
            dp = self.dataplane
            live = dp.versions[dp.read_config()[0] & 1]
            m = dp.read_meta(live) or {"lanes": self.options.lanes, "paths": self.options.paths}
            held = dp.positions(live)
            acts = dict(live.actions.lookup_all())
        # position -> (slice, lane) of the rule it holds (flags follow from qos)
        targets = {p: L.ACTION.unpack(acts[L.U32.pack(p)])[:2] for p in held if L.U32.pack(p) in acts}
        lanes: dict[str, LaneCounters] = {}
        for path in range(int(m["paths"])):
            for lane in range(int(m["lanes"])):
                lanes[f"{path}/{lane}"] = _lane_counters(raw.lanes.get(path * L.MAX_LANES + lane))
        for slot, c in raw.lanes.items():
            lanes.setdefault(f"{slot // L.MAX_LANES}/{slot % L.MAX_LANES}", _lane_counters(c))
        slice_ids = self._last_slices | {s for s in raw.slices if s != 0}
        return Counters(
            timestamp=time.time(),
            # counted per position; reported per IR rule index (the rank of its position)
            rules={i: _lane_counters(raw.rules.get(p)) for i, p in enumerate(held)},
            lanes=lanes,
            slices={s: _lane_counters(raw.slices.get(s)) for s in sorted(slice_ids)},
            slice_lanes=_slice_lanes(raw, targets),
            misses=_lane_counters(raw.rules.get(L.MISS_INDEX)),
            malformed=raw.globals[L.G_MALFORMED],
        )

    def health(self) -> Health:
        if self._agent is not None:
            return self._agent.health()
        try:
            state = self.read_state()
        except DriverError as e:
            return Health(ok=False, detail=e.message)
        if self._ifindex is None:
            return Health(ok=True, detail="loaded, not attached (no interface configured)", version=state.version)
        try:
            with netns(self.options.netns):
                attached = libbpf.xdp_query_id(self._ifindex, 0)
            ours = libbpf.obj_id(self.dataplane.prog_fd)
        except OSError as e:
            return Health(ok=False, detail=f"{self.options.interface}: {e}", version=state.version)
        if attached != ours:
            return Health(ok=False, detail=f"program not attached to {self.options.interface}", version=state.version)
        hot = sorted(self.dataplane.overloaded())
        detail = f"attached to {self.options.interface} ({self.options.mode})"
        return Health(ok=True, detail=detail + (f"; overloaded CPUs {hot}" if hot else ""), version=state.version)

    # ---- overload (seed 001 Algorithm 1, cpu_overloaded()) -------------------------------

    def set_overloaded(self, cpus: set[int] | None) -> None:
        """Pin the overload marks to ``cpus`` (automatic detection pauses); None clears
        them and hands the marks back to detection."""
        if self._agent is not None:
            self._agent.set_overloaded(cpus)
            return
        self._manual_overload = cpus is not None
        with self._lock:
            self.dataplane.set_overloaded(cpus or set())

    def detect_overload(self, period_s: float) -> set[int]:
        """Sample CPU load and softnet drops over ``period_s`` and write the marks."""
        dp = self.dataplane
        before, drops_before = overload.read_sample(), dp.cpumap_drop_counts()
        time.sleep(period_s)
        hot = overload.overloaded(
            before, overload.read_sample(), self.options.overload_busy, drops_before, dp.cpumap_drop_counts()
        )
        hot = {c for c in hot if c < L.MAX_CPUS}
        with self._lock:
            if self._dp is not None and not self._manual_overload:
                self._dp.set_overloaded(hot)
        return hot

    def set_egress_budget(self, rate_bps: float | None, lanes: int, burst_s: float = 0.1) -> None:
        """The node's egress budget (``DataPlane.set_egress_budget``); None lifts it."""
        if self._agent is not None:
            self._agent.set_egress_budget(rate_bps, lanes, burst_s)
            return
        with self._lock:
            self.dataplane.set_egress_budget(rate_bps, lanes, burst_s)

    def _poll_overload(self) -> None:
        period = self.options.overload_poll_s
        while not self._stop.is_set():
            if self._manual_overload:  # pinned by set_overloaded(); wait for None
                self._stop.wait(period)
                continue
            try:
                self.detect_overload(period)
            except (OSError, DriverError):
                self._stop.wait(period)

    def _detach(self) -> None:
        mode = libbpf.XDP_FLAGS_DRV_MODE if self.options.mode == "native" else libbpf.XDP_FLAGS_SKB_MODE
        for ns, ifindex in ((self.options.netns, self._ifindex), self._peer or (None, None)):
            if ifindex is None:
                continue
            try:
                with netns(ns):
                    libbpf.xdp_detach(ifindex, mode)
            except OSError:
                pass  # the interface (or its namespace) is already gone
        self._ifindex = self._peer = None

    # ---- test access ---------------------------------------------------------------------

    def inject_write_failure(self, after_entries: int = 1) -> None:
        """Fault injection for tests: the next ``apply`` fails once it has written
        ``after_entries`` entries, as a kernel refusing an update would. Through an agent,
        only one started with ``--test-hooks`` takes it."""
        if self._agent is not None:
            self._agent.inject_write_failure(after_entries)
            return
        self._fail_after = after_entries

    def run(self, packet: bytes, repeat: int = 1, live: bool = False) -> TestRun:
        """BPF_PROG_TEST_RUN of the loaded program on ``packet`` (``live``: the verdicts
        are carried out, e.g. frames really enter the cpumap)."""
        return self.dataplane.run(packet, repeat, live)

    def last_decision(self) -> LastDecision:
        """The last recorded decision, its rule as the IR index (``MISS_INDEX`` on a miss)."""
        if not self.options.record_last:
            raise DriverError("decisions are recorded only with the record_last option")
        with self._lock:
            dp = self.dataplane
            d = dp.last_decision()
            if d.rule == L.MISS_INDEX:
                return d
            held = dp.positions(dp.versions[dp.read_config()[0] & 1])
        return dataclasses.replace(d, rule=held.index(d.rule) if d.rule in held else L.MISS_INDEX)

    def close(self) -> None:
        """Release the data plane. A pinned one (``pin_name``) stays attached with its maps
        for the next loader to take over; ``teardown`` removes it."""
        if self._agent is not None:
            self._agent.close()
            return
        self._stop.set()
        if self._poller is not None:
            self._poller.join(timeout=5)
            self._poller = None
        with self._lock:
            if self._dp is None:
                return
            if self._ifindex is not None and self.pin_dir is None:
                mode = libbpf.XDP_FLAGS_DRV_MODE if self.options.mode == "native" else libbpf.XDP_FLAGS_SKB_MODE
                try:
                    with netns(self.options.netns):
                        libbpf.xdp_detach(self._ifindex, mode)
                except OSError:
                    pass  # the interface (or its namespace) is already gone
                self._ifindex = None
            self._dp.close()
            self._dp = None

    def teardown(self) -> list[str]:
        """Detach the program (and the peer's), release it and remove its pins: the data
        plane is gone. Returns the unpinned names."""
        with self._lock:
            if self.options.interface is not None and self._ifindex is None:
                try:
                    self._ifindex = if_index(self.options.interface, self.options.netns)
                    if self.options.tx_peer:
                        pns, _, pif = self.options.tx_peer.rpartition("/")
                        self._peer = (pns or None, if_index(pif, pns or None))
                except OSError:
                    pass  # the interface is gone: nothing to detach
            self._detach()
            if self._dp is not None:
                self._dp.close()
                self._dp = None
        self.close()
        self._stop = threading.Event()  # a later load starts afresh (agent --replace)
        return pins.remove(self.pin_dir) if self.pin_dir else []
