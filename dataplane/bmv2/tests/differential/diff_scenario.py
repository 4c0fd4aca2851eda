"""A seeded scenario for diff.p4: P4Runtime write batches (entries of every table, modified
and deleted ones, default actions, action profile members and selector groups with weights,
entries naming them, meter configs (indirect and direct), counter presets) and the frames
to send.

Everything comes from ``random.Random(seed)`` and the P4Info, so one seed is one scenario,
replayed exactly (diff_harness.py --seed N). Entries are valid as P4Runtime requires them
(values within the field, masks and prefixes with no value bits outside them, ranges with
low <= high, wildcards omitted, distinct priorities where the table needs them); keys and
packets draw from small pools of values per field, so that most packets hit entries,
overlapping ones too, and some miss.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass, field

from p4.config.v1 import p4info_pb2
from p4.v1 import p4runtime_pb2

MF = p4info_pb2.MatchField
Update = p4runtime_pb2.Update

PORTS = (1, 2, 3)  # the switch ports with a veth pair, on both switches
NO_LINK = 4  # a port some entries send to, with no link on either switch
ETHER_TYPE = 0x88B5  # diff.p4's TYPE_PROBE
PROBE = struct.Struct("!IBHHIHBBBBBIQHBB")  # diff.p4's probe_t, field by field
KIND_TABLES, KIND_MARKER = 0, 1
METER_CELLS = 8  # m_index values packets use: configured ones and never-configured ones
COUNTER_CELLS = 16  # c_index values packets use
MIN_FRAME = 64
# diff.p4's actions by how often entries get them: each of six tables may drop (and a later
# one forward again), so that some frames come out and some do not
ACTION_WEIGHTS = {"fwd": 6, "set_src": 3, "drop": 1, "NoAction": 2, "stamp": 4, "drop_late": 1, "metered": 6}

# Meter configs whose colors do not depend on time: rates and bursts so large that no run
# empties a bucket (GREEN), or zero so that a bucket never holds a token (every packet is
# beyond that rate: YELLOW past the committed one, RED past the peak one).
BIG = 10**9
METER_CONFIGS = {
    "green": p4runtime_pb2.MeterConfig(cir=BIG, cburst=BIG, pir=BIG, pburst=BIG),
    "yellow": p4runtime_pb2.MeterConfig(cir=0, cburst=0, pir=BIG, pburst=BIG),
    "red": p4runtime_pb2.MeterConfig(cir=0, cburst=0, pir=0, pburst=0),
}


@dataclass(frozen=True)
class Frame:
    seq: int
    port: int  # the ingress port
    data: bytes


@dataclass
class Step:
    writes: list[p4runtime_pb2.Update]  # one Write RPC
    frames: list[Frame]  # then sent


@dataclass
class Scenario:
    seed: int
    nonce: int  # in every frame's payload: the harness counts this run's frames only
    steps: list[Step] = field(default_factory=list)

    @property
    def frames(self) -> list[Frame]:
        return [f for step in self.steps for f in step.frames]


def encode(value: int) -> bytes:
    """P4Runtime's canonical bytestring: no leading zero bytes, at least one byte."""
    return value.to_bytes(max(1, (value.bit_length() + 7) // 8), "big")


def probe_frame(seq: int, nonce: int, fields: dict[str, int], rng: random.Random) -> bytes:
    """An Ethernet frame with diff.p4's probe header; the payload starts with the run's
    ``nonce`` so that the harness counts only its own frames."""
    eth = fields["dst"].to_bytes(6, "big") + fields["src"].to_bytes(6, "big") + ETHER_TYPE.to_bytes(2, "big")
    probe = PROBE.pack(
        seq, fields.get("kind", KIND_TABLES), fields["k_exact"], fields["k_tern"], fields["k_lpm"],
        fields["k_range"], fields["k_opt"], fields["c_index"], fields["m_index"], 0, 0, 0, 0, 0, 0, 0,
    )  # fmt: skip
    payload = nonce.to_bytes(4, "big") + rng.randbytes(rng.randrange(0, 48))
    frame = eth + probe + payload
    return frame + bytes(max(0, MIN_FRAME - len(frame)))


def marker_frame(seq: int, nonce: int, egress: int) -> bytes:
    """diff.p4 sends a marker straight to port ``egress``; it only reads the register."""
    fields = dict(dst=0xFFFFFFFFFFFF, src=0x020000000001, kind=KIND_MARKER, k_exact=egress)
    fields |= dict.fromkeys(("k_tern", "k_lpm", "k_range", "k_opt", "c_index", "m_index"), 0)
    return probe_frame(seq, nonce, fields, random.Random(seq))


class Generator:
    """Entries and frames for one seed over diff.p4's P4Info."""

    def __init__(self, info: p4info_pb2.P4Info, seed: int) -> None:
        self.info = info
        self.rng = random.Random(seed)
        self.seed = seed
        self.actions = {a.preamble.id: a for a in info.actions}
        # a few values per key field, for both the entries and the packets
        self.pools: dict[str, list[int]] = {"sm.ingress_port": list(PORTS), "sm.egress_port": list(PORTS)}
        self.profiles = Profiles(info, self)
        for t in info.tables:
            for f in t.match_fields:
                if f.name not in self.pools:
                    self.pools[f.name] = [self.rng.getrandbits(f.bitwidth) for _ in range(4)]

    def scenario(self, packets: int) -> Scenario:
        """Three steps, each a Write and a third of the frames: the entries inserted; some
        changed and default actions set (on tables, counters and registers that have
        counted); meters configured and counters preset (overwriting counts)."""
        sc = Scenario(self.seed, self.rng.getrandbits(32))
        members_and_groups = self.profiles.create()  # before the entries that name them
        inserted: list[p4runtime_pb2.TableEntry] = []
        for t in self.info.tables:
            inserted += self.entries(t, self.rng.randint(3, 12))
        writes = [
            members_and_groups + [self.update(Update.INSERT, te) for te in inserted],
            self.profiles.change() + self.changes(inserted),
            self.externs(inserted),
        ]
        frames = [self.frame(seq, sc.nonce) for seq in range(packets)]
        for n, batch in enumerate(writes):
            sc.steps.append(Step(batch, frames[n * packets // 3 : (n + 1) * packets // 3]))
        return sc

    @staticmethod
    def update(kind: int, te: p4runtime_pb2.TableEntry) -> p4runtime_pb2.Update:
        u = p4runtime_pb2.Update(type=kind)
        u.entity.table_entry.CopyFrom(te)
        return u

    # ---- entries ------------------------------------------------------------------------

    def entries(self, t: p4info_pb2.Table, n: int) -> list[p4runtime_pb2.TableEntry]:
        needs_priority = any(f.match_type in (MF.TERNARY, MF.RANGE, MF.OPTIONAL) for f in t.match_fields)
        priorities = self.rng.sample(range(1, 1000), n) if needs_priority else [0] * n
        seen: set[bytes] = set()
        out: list[p4runtime_pb2.TableEntry] = []
        for priority in priorities:
            te = p4runtime_pb2.TableEntry(table_id=t.preamble.id, priority=priority)
            if needs_priority and out and self.rng.random() < 0.15:
                te.match.extend(self.rng.choice(out).match)  # the same key at another priority
            else:
                for f in t.match_fields:
                    self.match(te, f)
            key = b"".join(m.SerializeToString(deterministic=True) for m in te.match)
            if key in seen and not needs_priority:  # without priorities, one key is one entry
                continue
            seen.add(key)
            self.table_action(te, t)
            out.append(te)
        return out

    def match(self, te: p4runtime_pb2.TableEntry, f: p4info_pb2.MatchField) -> None:
        """One field of an entry's key, or nothing (a wildcard) where the kind allows it."""
        rng, w = self.rng, f.bitwidth
        full = (1 << w) - 1
        v = rng.choice(self.pools[f.name])
        if f.match_type == MF.EXACT:
            te.match.add(field_id=f.id).exact.value = encode(v)
        elif f.match_type == MF.OPTIONAL:
            if rng.random() < 0.6:
                te.match.add(field_id=f.id).optional.value = encode(v)
        elif f.match_type == MF.TERNARY:
            if rng.random() < 0.25:
                return
            mask = rng.choice([full, full ^ ((1 << rng.randrange(1, w)) - 1), rng.getrandbits(w)])
            if mask:
                m = te.match.add(field_id=f.id).ternary
                m.value, m.mask = encode(v & mask), encode(mask)
        elif f.match_type == MF.LPM:
            plen = rng.randint(0, w)
            if plen:  # prefix length 0 is a wildcard: omitted
                m = te.match.add(field_id=f.id).lpm
                m.value, m.prefix_len = encode(v & (full ^ ((1 << (w - plen)) - 1))), plen
        elif f.match_type == MF.RANGE:
            low = max(0, v - rng.choice([0, 1, rng.randrange(1 << (w // 2))]))
            high = min(full, v + rng.choice([0, 1, rng.randrange(1 << (w // 2))]))
            if (low, high) != (0, full):
                m = te.match.add(field_id=f.id).range
                m.low, m.high = encode(low), encode(high)

    def action(self, t: p4info_pb2.Table, default: bool = False) -> p4runtime_pb2.Action:
        """A random action of the table, with random parameters; an egress port is mostly
        one of PORTS."""
        scope = p4info_pb2.ActionRef.TABLE_ONLY if default else p4info_pb2.ActionRef.DEFAULT_ONLY
        refs = [r for r in t.action_refs if r.scope != scope]
        weights = [ACTION_WEIGHTS.get(self.actions[r.id].preamble.name.rsplit(".", 1)[-1], 1) for r in refs]
        a = self.actions[self.rng.choices(refs, weights)[0].id]
        msg = p4runtime_pb2.Action(action_id=a.preamble.id)
        for p in a.params:
            if p.name == "port":
                value = self.rng.choice(PORTS) if self.rng.random() < 0.95 else NO_LINK
            else:
                value = self.rng.getrandbits(p.bitwidth)
            msg.params.add(param_id=p.id, value=encode(value))
        return msg

    def table_action(self, te: p4runtime_pb2.TableEntry, t: p4info_pb2.Table) -> None:
        """An entry's action: its own, or a member or group of the table's profile."""
        if t.implementation_id:
            te.action.CopyFrom(self.profiles.reference(t.implementation_id))
        else:
            te.action.action.CopyFrom(self.action(t))

    def changes(self, inserted: list[p4runtime_pb2.TableEntry]) -> list[p4runtime_pb2.Update]:
        """Entries modified (another action) or deleted, one inserted again (ALREADY_EXISTS
        on both), and default actions: set to another action, or reset to the program's by
        a MODIFY with no action."""
        rng = self.rng
        tables = {t.preamble.id: t for t in self.info.tables}
        out = []
        for te in rng.sample(inserted, len(inserted) // 4):
            changed = p4runtime_pb2.TableEntry()
            changed.CopyFrom(te)
            if rng.random() < 0.5:
                out.append(self.update(Update.DELETE, changed))
            else:
                self.table_action(changed, tables[te.table_id])
                out.append(self.update(Update.MODIFY, changed))
        out.append(self.update(Update.INSERT, rng.choice(inserted)))
        for t in self.info.tables:
            if rng.random() < 0.5:
                te = p4runtime_pb2.TableEntry(table_id=t.preamble.id, is_default_action=True)
                te.action.action.CopyFrom(self.action(t, default=True))
                out.append(self.update(Update.MODIFY, te))
                if rng.random() < 0.3:
                    reset = p4runtime_pb2.TableEntry(table_id=t.preamble.id, is_default_action=True)
                    out.append(self.update(Update.MODIFY, reset))
        return out

    def externs(self, inserted: list[p4runtime_pb2.TableEntry]) -> list[p4runtime_pb2.Update]:
        """Meter configs on some of the cells packets use; counters preset: cells of the
        indirect counter and the direct counters of some entries (counting adds to them)."""
        rng = self.rng
        out = []
        for meter in self.info.meters:
            for i in rng.sample(range(METER_CELLS), METER_CELLS - 2):  # two stay unconfigured
                u = Update(type=Update.MODIFY)
                u.entity.meter_entry.meter_id = meter.preamble.id
                u.entity.meter_entry.index.index = i
                u.entity.meter_entry.config.CopyFrom(METER_CONFIGS[rng.choice(list(METER_CONFIGS))])
                out.append(u)
        for counter in self.info.counters:
            for i in rng.sample(range(COUNTER_CELLS), 3):
                u = Update(type=Update.MODIFY)
                u.entity.counter_entry.counter_id = counter.preamble.id
                u.entity.counter_entry.index.index = i
                u.entity.counter_entry.data.packet_count = rng.randrange(1000)
                u.entity.counter_entry.data.byte_count = rng.randrange(100_000)
                out.append(u)
        metered = {d.direct_table_id for d in self.info.direct_meters}
        configured = []
        for te in inserted:
            if te.table_id in metered and rng.random() < 0.7:  # the others stay unconfigured: GREEN
                u = Update(type=Update.MODIFY)
                d = u.entity.direct_meter_entry
                d.table_entry.table_id, d.table_entry.priority = te.table_id, te.priority
                d.table_entry.match.extend(te.match)
                d.config.CopyFrom(METER_CONFIGS[rng.choice(list(METER_CONFIGS))])
                out.append(u)
                configured.append(te)
        for tid in sorted(metered):  # the default entry's: BMv2 has no meter for it (UNKNOWN)
            u = Update(type=Update.MODIFY)
            u.entity.direct_meter_entry.table_entry.table_id = tid
            u.entity.direct_meter_entry.table_entry.is_default_action = True
            u.entity.direct_meter_entry.config.CopyFrom(METER_CONFIGS["red"])
            out.append(u)
        if configured:
            # deleted and inserted again: BMv2 gives the new entry the lowest free index, the
            # old one's, and with it the old one's meter config (neither is reset)
            te = rng.choice(configured)
            out += [self.update(Update.DELETE, te), self.update(Update.INSERT, te)]
        direct = {d.direct_table_id for d in self.info.direct_counters}
        candidates = [te for te in inserted if te.table_id in direct]
        for te in rng.sample(candidates, min(2, len(candidates))):
            u = Update(type=Update.MODIFY)
            d = u.entity.direct_counter_entry
            d.table_entry.table_id, d.table_entry.priority = te.table_id, te.priority
            d.table_entry.match.extend(te.match)
            d.data.packet_count, d.data.byte_count = rng.randrange(1000), rng.randrange(100_000)
            out.append(u)
        return out

    # ---- frames -------------------------------------------------------------------------

    def near(self, name: str, width: int) -> int:
        """A packet's value for a key field: mostly a pool value or one close to it (LPM
        prefixes and ranges cover those), sometimes anything."""
        rng = self.rng
        if rng.random() < 0.1:
            return rng.getrandbits(width)
        v = rng.choice(self.pools[name])
        return v if rng.random() < 0.6 else min((1 << width) - 1, max(0, v + rng.randint(-3, 3)))

    def frame(self, seq: int, nonce: int) -> Frame:
        rng = self.rng
        fields = {
            "dst": self.near("hdr.ethernet.dst", 48),
            "src": rng.getrandbits(48),
            "k_exact": self.near("hdr.probe.k_exact", 16),
            "k_tern": self.near("hdr.probe.k_tern", 16),
            "k_lpm": self.near("hdr.probe.k_lpm", 32) ^ rng.getrandbits(rng.choice([0, 4, 12])),
            "k_range": self.near("hdr.probe.k_range", 16),
            "k_opt": self.near("hdr.probe.k_opt", 8),
            "c_index": rng.randrange(COUNTER_CELLS),
            "m_index": rng.randrange(METER_CELLS),
        }
        return Frame(seq, rng.choice(PORTS), probe_frame(seq, nonce, fields, rng))


class Profiles:
    """Members of diff.p4's action profiles and groups of its selector, as P4Runtime writes.

    The generator keeps what both switches will hold (the writes it expects to succeed) to
    name mostly members and groups that exist from entries, and never a group with no
    members (BMv2 leaves the next node of such a hit undefined). Some writes are meant to
    fail on both: a member still in a group deleted, a group with a weight of 0, weights
    beyond the group's max_size, a member twice, an unknown member."""

    def __init__(self, info: p4info_pb2.P4Info, gen: Generator) -> None:
        self.gen, self.rng = gen, gen.rng
        self.info = {p.preamble.id: p for p in info.action_profiles}
        tables = {t.preamble.id: t for t in info.tables}
        self.table = {pid: tables[p.table_ids[0]] for pid, p in self.info.items()}
        self.members: dict[int, list[int]] = {pid: [] for pid in self.info}
        self.groups: dict[int, dict[int, dict[int, int]]] = {pid: {} for pid in self.info}  # id -> weights
        # groups an entry cannot name: left empty, or in a profile without a selector
        self.unnamable: dict[int, list[int]] = {pid: [] for pid in self.info}
        self.ids = iter(self.rng.sample(range(1, 1 << 16), 200))

    def _member(self, kind: int, pid: int, member_id: int) -> Update:
        u = Update(type=kind)
        m = u.entity.action_profile_member
        m.action_profile_id, m.member_id = pid, member_id
        if kind != Update.DELETE:
            m.action.CopyFrom(self.gen.action(self.table[pid]))
        return u

    def _group(self, kind: int, pid: int, group_id: int, weights: dict[int, int], max_size: int = 0) -> Update:
        u = Update(type=kind)
        g = u.entity.action_profile_group
        g.action_profile_id, g.group_id, g.max_size = pid, group_id, max_size
        for mid, w in weights.items():
            g.members.add(member_id=mid, weight=w)
        return u

    def _weights(self, pid: int) -> dict[int, int]:
        """1 to 4 members of the profile, weights 1 to 3 (PI gives weight w w BMv2 members)."""
        chosen = self.rng.sample(self.members[pid], min(len(self.members[pid]), self.rng.randint(1, 4)))
        return {mid: self.rng.choice([1, 1, 2, 3]) for mid in chosen}

    def create(self) -> list[Update]:
        out = []
        for pid, p in self.info.items():
            for _ in range(self.rng.randint(3, 8)):
                mid = next(self.ids)
                out.append(self._member(Update.INSERT, pid, mid))
                self.members[pid].append(mid)
            if not p.with_selector:
                # BMv2 makes a group in a profile without a selector too; an entry of its
                # table that names it is refused by the target (UNKNOWN on both)
                gid = next(self.ids)
                out.append(self._group(Update.INSERT, pid, gid, self._weights(pid)))
                self.unnamable[pid].append(gid)
                continue
            for _ in range(self.rng.randint(2, 4)):
                gid, weights = next(self.ids), self._weights(pid)
                out.append(self._group(Update.INSERT, pid, gid, weights))
                self.groups[pid][gid] = weights
            # refused on both; the group is kept, empty, as PI keeps it (BMv2 refuses entries
            # naming an empty group: EMPTY_GRP)
            bad = dict.fromkeys(self.rng.sample(self.members[pid], 2), 3)
            for gid, weights, max_size in ((next(self.ids), bad, 4), (next(self.ids), {self.members[pid][0]: 0}, 0)):
                out.append(self._group(Update.INSERT, pid, gid, weights, max_size))
                self.unnamable[pid].append(gid)
        return out

    def reference(self, pid: int) -> p4runtime_pb2.TableAction:
        """What an indirect entry names: mostly a group of a selector, else a member; now
        and then an id nobody created or a one-shot action set (INVALID_ARGUMENT on both),
        or a group the target refuses (empty, or of a profile without a selector: UNKNOWN
        on both)."""
        a = p4runtime_pb2.TableAction()
        r = self.rng.random()
        if r < 0.03:
            a.action_profile_member_id = next(self.ids)
        elif r < 0.04:  # one-shot, in a profile programmed member by member: INVALID_ARGUMENT on both
            a.action_profile_action_set.action_profile_actions.add(weight=1).action.CopyFrom(
                self.gen.action(self.table[pid])
            )
        elif self.unnamable[pid] and r < 0.06:
            a.action_profile_group_id = self.rng.choice(self.unnamable[pid])
        elif self.groups[pid] and r < 0.8:
            a.action_profile_group_id = self.rng.choice(list(self.groups[pid]))
        else:
            a.action_profile_member_id = self.rng.choice(self.members[pid])
        return a

    def change(self) -> list[Update]:
        """Members modified (their copies too), groups re-weighted (copies made and deleted),
        members and groups deleted: in use (UNKNOWN on both) or not, a new member."""
        rng, out = self.rng, []
        for pid, p in self.info.items():
            for mid in rng.sample(self.members[pid], 2):
                out.append(self._member(Update.MODIFY, pid, mid))
            in_groups = {m for weights in self.groups[pid].values() for m in weights}
            if in_groups:
                out.append(self._member(Update.DELETE, pid, rng.choice(sorted(in_groups))))  # in use
            free = [m for m in self.members[pid] if m not in in_groups]
            if free:  # deleted unless an entry names it: its handle is free for the next member
                gone = rng.choice(free)
                out.append(self._member(Update.DELETE, pid, gone))
                self.members[pid].remove(gone)
            for _ in range(2):
                mid = next(self.ids)
                out.append(self._member(Update.INSERT, pid, mid))
                self.members[pid].append(mid)
            # groups re-weighted after the new members: those take the lowest free handles,
            # copies made and purged here take and free more
            for gid in rng.sample(list(self.groups[pid]), min(2, len(self.groups[pid]))):
                weights = self._weights(pid)
                out.append(self._group(Update.MODIFY, pid, gid, weights))
                self.groups[pid][gid] = weights
            if p.with_selector and rng.random() < 0.5:
                out.append(self._group(Update.DELETE, pid, rng.choice(list(self.groups[pid])), {}))  # maybe in use
        return out
