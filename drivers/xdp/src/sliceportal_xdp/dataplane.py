"""The loaded XDP object: its maps, the A/B table copies, counters and test runs.

Everything here speaks the tables' normal form (see ``lowering``) on one side and map
bytes on the other; the driver adds options, attach and the contract around it.
"""

from __future__ import annotations

import ctypes
import ipaddress
import os
import struct
from collections.abc import Callable
from dataclasses import astuple, dataclass, field

from sliceportal.drivers.contract import NativeEntry

from . import layout as L
from .image import ARRAY_SHAPE, ARRAYS, KEYED, Image, ImageDiff, Keyed, holds
from .libbpf import BpfObject, Map, TestRun, obj_id, test_run
from .lowering import TUNNEL_FIELDS, rules_list
from .pins import PinDir

Tables = dict[str, list[NativeEntry]]
PROGRAM = "sliceportal_xdp"
TRACE_PROGRAM = "sliceportal_cpumap_enqueue"


@dataclass
class Counter:
    packets: int = 0
    bytes: int = 0
    alt: int = 0
    drop_rate: int = 0
    steered: int = 0
    passed: int = 0
    ecn: int = 0  # marked CE


@dataclass
class RawCounters:
    rules: dict[int, Counter] = field(default_factory=dict)
    lanes: dict[int, Counter] = field(default_factory=dict)  # rr_path * MAX_LANES + lane
    slices: dict[int, Counter] = field(default_factory=dict)
    globals: list[int] = field(default_factory=list)
    cpumap_drops: dict[int, int] = field(default_factory=dict)  # target CPU -> frames


@dataclass(frozen=True, slots=True)
class LastDecision:
    rule: int
    slice_id: int
    lane: int
    rr_path: int
    verdict: int
    parsed: bool
    src_ip: int
    dst_ip: int
    vni: int | None
    teid: int | None
    vlan: int | None
    dst_port: int
    dscp: int


class VersionMaps:
    """One copy (``a`` or ``b``) of the rule tables."""

    def __init__(self, obj: BpfObject, s: str) -> None:
        bm = L.BITMAP_BYTES
        self.src_ip = obj.map(f"src_lpm_{s}", L.LPM_KEY.size, bm)
        self.dst_ip = obj.map(f"dst_lpm_{s}", L.LPM_KEY.size, bm)
        self.dst_port = obj.map(f"port_{s}", 4, bm)
        self.dscp = obj.map(f"dscp_{s}", 4, bm)
        self.vni = obj.map(f"vni_{s}", 4, bm)
        self.teid = obj.map(f"teid_{s}", 4, bm)
        self.vlan = obj.map(f"vlan_{s}", 4, bm)
        self.special = obj.map(f"special_{s}", 4, bm)
        self.actions = obj.map(f"actions_{s}", 4, L.ACTION.size)
        self.qos = obj.map(f"qos_{s}", 4, L.QOS.size)
        self.meta = obj.map(f"meta_{s}", 4, L.META.size)
        # the arrays are BPF_F_MMAPABLE: whole copies move with memcpy
        self.mem = {f: self.table(f).mmap() for f in ARRAYS}

    def close(self) -> None:
        for m in self.mem.values():
            m.close()

    def tunnel(self, f: str) -> Map:
        m: Map = getattr(self, f)
        return m

    def table(self, name: str) -> Map:
        """The map holding table ``name`` (``image.KEYED`` / ``image.ARRAYS``)."""
        m: Map = getattr(self, name)
        return m


def _u32s(n: int) -> bytes:
    return struct.pack(f"<{n}I", *range(n))


def _rle_from_array(raw: bytes, size: int) -> list[NativeEntry]:
    # compare raw chunks (cheap) and decode a bitmap only where a run starts
    bm = L.BITMAP_BYTES
    out: list[NativeEntry] = []
    start = 0
    cur = raw[:bm]
    for i in range(1, size + 1):
        if i == size or raw[i * bm : (i + 1) * bm] != cur:
            out.append(
                {
                    "first": start,
                    "last": i - 1,
                    "rules": rules_list(L.bitmap_int(raw[start * bm : (start + 1) * bm])),
                }
            )
            start = i
            cur = raw[i * bm : (i + 1) * bm]
    return out


class DataPlane:
    """The object file loaded into the kernel (not yet attached anywhere)."""

    def __init__(self, path: str, capacity: dict[str, int], pin_dir: str | None = None) -> None:
        """``pin_dir``: the maps live pinned there (``pins``); a compatible set already
        pinned is taken over with what it holds (``adopted``), an incompatible one refused."""
        # the cpumap-drop tracepoint needs kernel BTF; without it that signal is absent
        self.traces_cpumap = os.path.exists("/sys/kernel/btf/vmlinux")
        sizes = {}
        for s in ("a", "b"):
            sizes[f"src_lpm_{s}"] = capacity["src_ip"]
            sizes[f"dst_lpm_{s}"] = capacity["dst_ip"]
            for f in TUNNEL_FIELDS:
                sizes[f"{f}_{s}"] = capacity[f]
        self.pin_dir, self.adopted = pin_dir, False
        pin = PinDir(pin_dir) if pin_dir is not None else None

        def check(o: BpfObject) -> None:
            if pin is not None:
                self.adopted = pin.check(o.map_specs())

        self.obj = BpfObject(path, sizes, () if self.traces_cpumap else (TRACE_PROGRAM,), pin_dir, check)
        if pin is not None:
            pin.record()
        self.prog_fd = self.obj.program_fd(PROGRAM)
        self.versions = (VersionMaps(self.obj, "a"), VersionMaps(self.obj, "b"))
        # per copy: the image its last verified push left there (None: unknown, read it)
        self.held: list[Image | None] = [None, None]
        self._floor: dict[str, dict[int, Counter]] = {}  # last counters reported, per kind
        o = self.obj
        self.config = o.map("config", 4, L.CONFIG.size)
        self._config_mem = self.config.mmap()
        self._tracing = False
        self.lane_cfg = o.map("lane_cfg", 4, L.LANE_CFG.size)
        self.overload = o.map("overload", 4, 4)
        self.alt = o.map("alt", 4, L.ALT.size)
        self.buckets = o.map("buckets", 4, L.BUCKET_SIZE)
        self.egress = o.map("egress", 4, L.EGRESS.size)
        self.lane_cap = o.map("lane_cap", 4, L.LANE_CAP.size)
        self.cpumap_full = o.map("cpumap_full", 4, 8)
        self.last = o.map("last", 4, L.LAST.size)
        self.cpu_map = o.map("cpu_map", 4, L.CPUMAP_VAL.size)
        self.rule_stats = o.map("rule_stats", 4, L.COUNTER.size, percpu=True)
        self.lane_stats = o.map("lane_stats", 4, L.COUNTER.size, percpu=True)
        self.slice_stats = o.map("slice_stats", 4, L.COUNTER.size, percpu=True)
        self.global_stats = o.map("global_stats", 4, 8, percpu=True)
        self.cpumap_drops = o.map("cpumap_drops", 4, 8, percpu=True)
        self.flow_cache = o.map("flow_cache", 4, L.CACHE_SLOT.size, percpu=True)

    def close(self) -> None:
        self._config_mem.close()
        for v in self.versions:
            v.close()
        self.obj.close()

    # ---- global configuration ------------------------------------------------------

    def read_config(self) -> tuple[int, int]:
        """(generation, flags); the live table copy is ``generation & 1``."""
        raw = self.config.lookup(L.U32.pack(0))
        assert raw is not None  # an array always has index 0
        generation, flags, _, _ = L.CONFIG.unpack(raw)
        return generation, flags

    def write_config(self, generation: int, flags: int) -> None:
        self.config.update(L.U32.pack(0), L.CONFIG.pack(generation, flags, obj_id(self.cpu_map.fd), 0))
        if self.traces_cpumap and not self._tracing:
            self.obj.attach(TRACE_PROGRAM)
            self._tracing = True

    def set_generation(self, generation: int) -> None:
        """Switch versions: one aligned 4-byte store into the mmapped config, so every
        packet reads the old or the new generation, never a torn one."""
        ctypes.c_uint32.from_buffer(self._config_mem, 0).value = generation & 0xFFFFFFFF

    def set_lane(self, lane: int, cpu: int, flags: int) -> None:
        self.lane_cfg.update(L.U32.pack(lane), L.LANE_CFG.pack(cpu, flags))

    def set_overloaded(self, cpus: set[int]) -> None:
        keys = _u32s(L.MAX_CPUS)
        vals = b"".join(L.U32.pack(1 if c in cpus else 0) for c in range(L.MAX_CPUS))
        self.overload.update_batch(keys, vals)

    def overloaded(self) -> set[int]:
        return {L.U32.unpack(k)[0] for k, v in self.overload.lookup_all() if L.U32.unpack(v)[0]}

    def set_alt(self, dst_mac: bytes, src_mac: bytes, dst_ip: bytes) -> None:
        self.alt.update(L.U32.pack(0), L.ALT.pack(dst_mac, src_mac, int.from_bytes(dst_ip, "little"), 1))

    def set_egress_budget(self, rate_bps: float | None, lanes: int, burst_s: float = 0.1) -> None:
        """The node's egress budget (``struct sp_egress``): ``rate_bps`` for everything the
        program forwards, admitted by lane priority (lane l keeps ``(lanes-1-l) / lanes`` of
        the bucket in reserve, so the lowest lane is refused first); None lifts it. The
        bucket holds ``burst_s`` of the rate: a sender's burst of the highest lane passes."""
        if not rate_bps:
            self._set_flag(L.CFG_EGRESS, False)  # the fast path stops looking at the budget
            self.egress.update(L.U32.pack(0), bytes(L.EGRESS.size))
            return
        rate_Bps = max(1, int(rate_bps // 8))
        burst = max(int(rate_Bps * burst_s), 4 * lanes * 1518)
        step = burst // lanes
        reserve = [(lanes - 1 - min(lane, lanes - 1)) * step for lane in range(L.MAX_LANES)]
        self.egress.update(L.U32.pack(0), L.EGRESS.pack(0, 0, rate_Bps, burst, burst * 1_000_000_000, 0, *reserve))
        self._set_flag(L.CFG_EGRESS, True)

    def _set_flag(self, flag: int, on: bool) -> None:
        """Set or clear one config flag: one aligned 4-byte store into the mmapped config."""
        word = ctypes.c_uint32.from_buffer(self._config_mem, 4)
        word.value = (word.value | flag) if on else (word.value & ~flag)

    def set_lane_capacity(self, lane: int, cpu: int, rate_pps: int, burst: int) -> None:
        """The queue of a prioritised lane (``struct sp_lane_cap``): ``burst`` packets
        drained at ``rate_pps``; beyond it packets go to the alt node. 0 pps = unbounded
        (the lane also needs the LANE_CAPPED flag, ``set_lane``)."""
        ns = 1_000_000_000
        # the overflow events of the lane's CPU so far: only later ones make it back off
        raw = self.cpumap_full.lookup(L.U32.pack(cpu))
        events = int.from_bytes(raw, "little") if raw else 0
        self.lane_cap.update(L.U32.pack(lane), L.LANE_CAP.pack(0, 0, burst * ns, 0, rate_pps, burst, rate_pps, events))

    def enable_cpu(self, cpu: int, qsize: int) -> None:
        self.cpu_map.update(L.U32.pack(cpu), L.CPUMAP_VAL.pack(qsize, 0))

    def cpu_enabled(self, cpu: int, qsize: int) -> bool:
        """The cpumap already has ``cpu`` with this queue size (a taken-over data plane)."""
        raw = self.cpu_map.lookup(L.U32.pack(cpu))
        return raw is not None and L.CPUMAP_VAL.unpack(raw)[0] == qsize

    # ---- the rule tables -------------------------------------------------------------

    def read_image(self, v: VersionMaps) -> Image:
        """The bytes a copy holds: one batch lookup per keyed map, the arrays through
        their mmap."""
        img: Image = {f: self._read_keyed(v.table(f)) for f in KEYED}
        for f in ARRAYS:
            n, size = ARRAY_SHAPE[f]
            img[f] = v.mem[f][: n * size]
        return img

    @staticmethod
    def _read_keyed(m: Map) -> Keyed:
        raw = m.lookup_raw()  # None: no batch lookup in this kernel, read key by key
        if raw is None:
            pairs = m.lookup_all()
            raw = memoryview(b"".join(k for k, _ in pairs)), memoryview(b"".join(val for _, val in pairs))
        return Keyed.read(*raw, m.key_size, m.value_size)

    def mismatched(self, v: VersionMaps, want: Image) -> list[str]:
        """The tables where a copy does not hold ``want`` byte for byte (empty: it holds
        it exactly). A keyed map's batch read is sorted by key and compared with the
        plan's sorted rows as two arrays (the kernel answers a hash map in bucket order);
        the arrays are compared in place through their mmap."""
        bad = []
        for f in KEYED:
            if self._read_keyed(v.table(f)) != want[f]:
                bad.append(f)
        for f in ARRAYS:
            n, size = ARRAY_SHAPE[f]
            w = want[f]
            assert isinstance(w, bytes) and len(w) == n * size
            if not holds(v.mem[f], w):
                bad.append(f)
        return bad

    def write_changes(self, v: VersionMaps, d: ImageDiff, progress: Callable[[int], None]) -> int:
        """Apply ``d`` to a copy: per map one batch delete and one batch update of only
        the changed slots. Returns the slots written or deleted."""
        done = 0
        for f, c in d.changes.items():
            if not c.writes:
                continue
            if f in v.mem:
                mem, size = v.mem[f], ARRAY_SHAPE[f][1]
                for first, last in c.runs():
                    mem[first * size : (last + 1) * size] = c.array[first * size : (last + 1) * size]
            else:
                m = v.table(f)
                m.delete_many(list(map(bytes, c.delete)))
                m.update_batch(c.put.keys.tobytes(), c.put.values.tobytes())
            done += c.writes
            progress(done)
        return done

    def clear(self, v: VersionMaps) -> None:
        """Empty a copy: no keys, all-zero arrays (as never written)."""
        self.held = [None, None]
        for m in (v.src_ip, v.dst_ip, v.vni, v.teid, v.vlan):
            m.delete_many(m.keys())
        for f, mem in v.mem.items():
            n, size = ARRAY_SHAPE[f]
            mem[: n * size] = bytes(n * size)

    def read_meta(self, v: VersionMaps) -> NativeEntry | None:
        """Just the meta row of a copy (cheap: counters need only the geometry)."""
        raw = v.meta.lookup(L.U32.pack(0))
        assert raw is not None
        words, slots, lanes, paths, *_, ver = L.META.unpack(raw)
        if not words:
            return None
        return {"slots": slots, "lanes": lanes, "paths": paths, "version": ver.rstrip(b"\0").decode()}

    def positions(self, v: VersionMaps) -> list[int]:
        """The rule positions a copy holds, rising (= IR order). Every rule is in the set of
        at least one DSCP value or in ``dscp_any``, and a free position in none: the union
        of those 65 sets (8 KB of mmapped arrays) is the rules."""
        raw = v.mem["dscp"][: L.DSCPS * L.BITMAP_BYTES]
        at = L.SPECIAL_SLOTS.index("dscp_any") * L.BITMAP_BYTES
        bits = L.bitmap_int(v.mem["special"][at : at + L.BITMAP_BYTES])
        for o in range(0, len(raw), L.BITMAP_BYTES):
            bits |= L.bitmap_int(raw[o : o + L.BITMAP_BYTES])
        return rules_list(bits)

    def read(self, v: VersionMaps) -> Tables | None:
        """The tables a copy holds, in normal form; None when it was never filled."""
        raw = v.meta.lookup(L.U32.pack(0))
        assert raw is not None
        words, slots, lanes, paths, mode, miss_lane, miss_path, _, ver = L.META.unpack(raw)
        if words == 0:
            return None
        t: Tables = {}
        for f in ("src_ip", "dst_ip"):
            es = []
            for k, val in getattr(v, f).lookup_all():
                plen, addr = L.LPM_KEY.unpack(k)
                es.append((plen, int.from_bytes(addr, "big"), rules_list(L.bitmap_int(val))))
            es.sort()
            t[f] = [{"prefix": f"{ipaddress.IPv4Address(a)}/{p}", "rules": r} for p, a, r in es]
        t["dst_port"] = _rle_from_array(v.mem["dst_port"][: L.PORTS * L.BITMAP_BYTES], L.PORTS)
        t["dscp"] = _rle_from_array(v.mem["dscp"][: L.DSCPS * L.BITMAP_BYTES], L.DSCPS)
        special_raw = dict(v.special.lookup_all())
        t["special"] = []
        for f in TUNNEL_FIELDS:
            vals = sorted((L.U32.unpack(k)[0], L.bitmap_int(b)) for k, b in v.tunnel(f).lookup_all())
            t[f] = [{"value": k, "rules": rules_list(b)} for k, b in vals]
        for i, slot in enumerate(L.SPECIAL_SLOTS):
            bits = L.bitmap_int(special_raw[L.U32.pack(i)])
            t["special"].append({"slot": slot, "rules": rules_list(bits)})
        acts = dict(v.actions.lookup_all())
        t["actions"] = []
        held = self.positions(v)
        for i in held:
            sid, lane, path, _ = L.ACTION.unpack(acts[L.U32.pack(i)])  # flags follow from qos
            t["actions"].append({"rule": i, "slice_id": sid, "lane": lane, "rr_path": path})
        t["qos"] = []
        for k, val in sorted(v.qos.lookup_all(), key=lambda kv: L.U32.unpack(kv[0])[0]):
            rate, burst, ecn_ns = L.QOS.unpack(val)
            if rate:
                t["qos"].append(
                    {
                        "slice_id": L.U32.unpack(k)[0],
                        "rate_Bps": rate,
                        "burst_bytes": burst,
                        "ecn_ns": None if ecn_ns == L.ECN_OFF else ecn_ns,
                    }
                )
        t["meta"] = [
            {
                "version": ver.rstrip(b"\0").decode(),
                "rules": len(held),
                "slots": slots,
                "lanes": lanes,
                "paths": paths,
                "miss_mode": "fixed" if mode == L.MISS_FIXED else "algorithm1",
                "miss_lane": miss_lane,
                "miss_path": miss_path,
            }
        ]
        return t

    # ---- statistics ------------------------------------------------------------------

    @staticmethod
    def _sum_counters(m: Map) -> dict[int, Counter]:
        out: dict[int, Counter] = {}
        for k, val in m.lookup_all():
            tot = [0] * L.COUNTER_FIELDS
            for off in range(0, len(val), m.slot):
                for i, x in enumerate(L.COUNTER.unpack_from(val, off)):
                    tot[i] += x
            if any(tot):
                out[L.U32.unpack(k)[0]] = Counter(*tot)
        return out

    def cpumap_drop_counts(self) -> dict[int, int]:
        """Target CPU -> frames its cpumap queue refused (monotonic)."""
        out = {}
        for k, val in self.cpumap_drops.lookup_all():
            n = sum(int.from_bytes(val[o : o + 8], "little") for o in range(0, len(val), 8))
            if n:
                out[L.U32.unpack(k)[0]] = n
        return out

    def _pending(self, rules: dict[int, Counter], lanes: dict[int, Counter], slices: dict[int, Counter]) -> None:
        """Add the counts the flow cache's slots hold but have not flushed yet (a hit
        counts only in its slot: one map entry per packet)."""
        step = self.flow_cache.slot
        for _, val in self.flow_cache.lookup_all():
            for off in range(0, len(val), step):
                if not val[off + 40 : off + 48].strip(b"\0"):
                    continue  # no pending packets (the common case: skip the unpack)
                _, _, rule, _, sid, lane, path, _, *counts = L.CACHE_SLOT.unpack_from(val, off)
                for d, idx in ((rules, rule), (lanes, path * L.MAX_LANES + lane), (slices, sid)):
                    c = d.setdefault(idx, Counter())
                    c.packets += counts[0]
                    c.bytes += counts[1]
                    c.alt += counts[2]
                    c.drop_rate += counts[3]
                    c.steered += counts[4]
                    c.passed += counts[5]
                    c.ecn += counts[6]

    def global_counts(self) -> list[int]:
        """The global counters (``L.G_*``) summed over CPUs: one small map, without the
        per-rule, per-lane and per-slice statistics and the flow cache ``counters`` scans."""
        g = [0] * L.G_N
        for k, val in self.global_stats.lookup_all():
            idx = L.U32.unpack(k)[0]
            g[idx] = sum(int.from_bytes(val[o : o + 8], "little") for o in range(0, len(val), 8))
        return g

    def counters(self) -> RawCounters:
        g = self.global_counts()
        # read the statistics before the cache: a slot flushed in between is then missed
        # once (read again next time), never counted twice
        rules = self._sum_counters(self.rule_stats)
        lanes = self._sum_counters(self.lane_stats)
        slices = self._sum_counters(self.slice_stats)
        self._pending(rules, lanes, slices)
        for kind, now in (("rules", rules), ("lanes", lanes), ("slices", slices)):
            floor = self._floor.setdefault(kind, {})
            for idx, c in now.items():
                # a slot flushed between the two reads above was missed: never report
                # less than before (the counters are monotonic)
                prev = floor.get(idx)
                if prev is not None:
                    now[idx] = Counter(*(max(a, b) for a, b in zip(astuple(c), astuple(prev), strict=True)))
                floor[idx] = now[idx]
            for idx, prev in floor.items():
                now.setdefault(idx, prev)
        # every packet is classified (one rule or the miss slot) or counted as not parsed
        g[L.G_PACKETS] = sum(c.packets for c in rules.values()) + g[L.G_MALFORMED] + g[L.G_UNPARSED]
        return RawCounters(rules=rules, lanes=lanes, slices=slices, globals=g, cpumap_drops=self.cpumap_drop_counts())

    # ---- test runs -------------------------------------------------------------------

    def run(self, packet: bytes, repeat: int = 1, live: bool = False) -> TestRun:
        return test_run(self.prog_fd, packet, repeat, live)

    def last_decision(self) -> LastDecision:
        raw = self.last.lookup(L.U32.pack(0))
        assert raw is not None
        (rule, sid, lane, path, verdict, parsed, src, dst, vni, teid, vlan, port, dscp, present) = L.LAST.unpack(raw)
        return LastDecision(
            rule=rule,
            slice_id=sid,
            lane=lane,
            rr_path=path,
            verdict=verdict,
            parsed=bool(parsed),
            src_ip=src,
            dst_ip=dst,
            vni=vni if present & L.P_VNI else None,
            teid=teid if present & L.P_TEID else None,
            vlan=vlan if present & L.P_VLAN else None,
            dst_port=port,
            dscp=dscp,
        )
