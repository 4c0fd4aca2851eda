"""The engine's action profiles, selectors and direct meters (engine/src/profiles.rs), on
p4c's build of the differential suite's diff.p4, against what BMv2's source says (each
test names the rule): the expected member is computed here from the hash, independently
of the engine. The differential suite (differential/) compares the same against
simple_switch_grpc on random scenarios; these pin the rules one by one."""

from __future__ import annotations

import random
import sys
import zlib
from pathlib import Path

import pytest

HERE = Path(__file__).resolve().parents[1]
DIFF = HERE / "tests" / "differential"
for extra in (HERE, DIFF):
    if str(extra) not in sys.path:
        sys.path.insert(0, str(extra))

from bmv2_target.engine import Engine  # noqa: E402
from diff_scenario import PROBE, probe_frame  # noqa: E402
from stf.runner import compile_one  # noqa: E402

pytestmark = pytest.mark.needs_p4c
TRACE, DCOLOR = 12, 15  # probe_t fields
MEMBER, GROUP = 0, 1


@pytest.fixture(scope="module")
def program(tmp_path_factory: pytest.TempPathFactory) -> str:
    out = tmp_path_factory.mktemp("diff")
    failed = compile_one(DIFF / "diff.p4", out)
    assert failed is None, failed
    return (out / "diff.json").read_text()


class Diff:
    """diff.p4 on a fresh engine, by name."""

    def __init__(self, program: str) -> None:
        self.e = Engine(program)
        self.t = {name: i for i, (name, _, _) in enumerate(self.e.tables())}

    def table(self, name: str) -> int:
        return self.t[f"DiffIngress.{name}"]

    def profile(self, name: str) -> int:
        p = self.e.profile_index(f"DiffIngress.{name}")
        assert p is not None
        return p

    def member(self, profile: str, table: str, tag: int, port: int = 2) -> int:
        """A member running fwd(port, tag): its tag ends the frame's trace."""
        t = self.table(table)
        h: int = self.e.member_add(self.profile(profile), self.e.action_of(t, "DiffIngress.fwd"), [port, tag])
        return h

    def run(self, **fields: int) -> tuple[bytes, tuple[int, ...]] | None:
        """A frame through ingress and egress: (frame, probe fields), None when dropped."""
        f = dict(dst=0x020000000002, src=0x020000000001, k_exact=0, k_tern=0, k_lpm=0, k_range=0, k_opt=0)
        f |= dict(c_index=0, m_index=0) | fields
        pkt = self.e.ingress(probe_frame(fields.get("seq", 7), 0, f, random.Random(0)), 1, 100)
        if pkt is None:
            return None
        out = self.e.egress(pkt, 101)
        return (out, PROBE.unpack_from(out, 14)) if out is not None else None

    def field(self, i: int, **fields: int) -> int:
        """Probe field ``i`` of the frame out (it must come out)."""
        got = self.run(**fields)
        assert got is not None
        return got[1][i]

    def last_tag(self, **fields: int) -> int:
        return self.field(TRACE, **fields) & 0xFF


def crc16_arc(data: bytes) -> int:
    crc = 0
    for b in data:
        crc ^= b
        for _ in range(8):
            crc = (crc >> 1) ^ 0xA001 if crc & 1 else crc >> 1
    return crc


def test_member_handles_are_the_lowest_free_ones(program: str) -> None:
    # HandleMgr::get_handle: the lowest free handle, a freed one taken again first
    d = Diff(program)
    hs = [d.member("groups", "t_select", tag) for tag in (1, 2, 3, 4)]
    assert hs == [0, 1, 2, 3]
    d.e.member_delete(d.profile("groups"), 1)
    d.e.member_delete(d.profile("groups"), 0)
    assert [d.member("groups", "t_select", tag) for tag in (5, 6, 7)] == [0, 1, 4]


def test_a_group_chooses_its_member_by_crc16_of_the_selector_fields(program: str) -> None:
    # ActionProfile::choose_from_group: crc16 over ethernet.src ++ k_tern (BufBuilder),
    # the member at hash % size of the group's handles in order (flat_set::nth)
    d = Diff(program)
    p, t = d.profile("groups"), d.table("t_select")
    tags = {d.member("groups", "t_select", 0x10 + i): 0x10 + i for i in range(5)}
    g = d.e.group_create(p)
    for h in (4, 0, 3):  # added out of order: the group keeps handle order
        d.e.group_member(p, g, h, True)
    d.e.insert_indirect(t, [(0, 0)], 1, GROUP, g, 1, 99, b"", 0)
    d.e.commit()
    chosen = set()
    src = 0x02000000F3F3  # t_lpm's default action (set_src) writes it before t_select
    for k_tern in range(40):
        h = crc16_arc(src.to_bytes(6, "big") + k_tern.to_bytes(2, "big"))
        want = tags[[0, 3, 4][h % 3]]
        assert d.last_tag(k_tern=k_tern) == want
        chosen.add(want)
    assert len(chosen) == 3  # every member takes some packets


def test_crc32_and_identity_selectors(program: str) -> None:
    d = Diff(program)
    p32, t32 = d.profile("groups32"), d.table("t_select32")
    tags = {d.member("groups32", "t_select32", 0x20 + i): 0x20 + i for i in range(4)}
    g = d.e.group_create(p32)
    for h in tags:
        d.e.group_member(p32, g, h, True)
    d.e.insert_indirect(t32, [(0, 0)], 1, GROUP, g, 1, 1, b"", 0)
    pr, tr = d.profile("rounds"), d.table("t_rounds")
    rtags = {d.member("rounds", "t_rounds", 0x30 + i): 0x30 + i for i in range(3)}
    gr = d.e.group_create(pr)
    for h in rtags:
        d.e.group_member(pr, gr, h, True)
    d.e.insert_indirect(tr, [(5, 0xFFFF)], 0, GROUP, gr, 0, 2, b"", 0)
    d.e.commit()
    dst = 0x020000000002
    for seq in range(12):
        got = d.run(seq=seq, dst=dst, k_range=5)
        assert got is not None
        trace = got[1][TRACE]
        # t_select32 then t_rounds push their tags: ... | crc32 member | identity member
        h32 = zlib.crc32(dst.to_bytes(6, "big") + seq.to_bytes(4, "big"))
        assert (trace >> 8) & 0xFF == 0x20 + h32 % 4
        # identity: the packed k_lpm ++ seq as a 64-bit number, cut to 32 bits: seq
        assert trace & 0xFF == 0x30 + seq % 3


def test_what_is_still_referenced_cannot_be_deleted(program: str) -> None:
    # ActionProfile::delete_member / delete_group: MBR_STILL_USED, GRP_STILL_USED
    d = Diff(program)
    p, t = d.profile("groups"), d.table("t_select")
    m = d.member("groups", "t_select", 1)
    g = d.e.group_create(p)
    d.e.group_member(p, g, m, True)
    with pytest.raises(ValueError, match="still used"):
        d.e.member_delete(p, m)
    h = d.e.insert_indirect(t, [(0, 0)], 1, GROUP, g, 1, 1, b"", 0)
    with pytest.raises(ValueError, match="still used"):
        d.e.group_delete(p, g)
    d.e.delete(t, h)
    d.e.group_delete(p, g)  # its members' references go with it
    d.e.member_delete(p, m)
    with pytest.raises(ValueError, match="no member / group handle"):
        d.e.insert_indirect(t, [(0, 0)], 1, MEMBER, m, 1, 1, b"", 0)


def test_an_indirect_miss_runs_no_action(program: str) -> None:
    # MatchTableIndirect::lookup without a default member: default_default_entry, which
    # p4c leaves empty for an indirect table; next: __MISS__ (no flag 32 for t_select)
    d = Diff(program)
    got = d.run(k_exact=9)
    assert got is not None
    assert got[1][TRACE] == 0xF1F3  # t_exact's and t_lpm's defaults only
    assert got[1][14] & 32 == 0
    d.member("members", "t_profile", 0x44, port=3)
    d.e.insert_indirect(d.table("t_profile"), [(9, 0xFFFF)], 0, MEMBER, 0, 0, 5, b"", 0)
    d.e.commit()
    hit = d.run(k_exact=9)
    assert hit is not None and hit[1][TRACE] == 0xF1F344


def test_a_direct_meter_runs_on_a_hit_and_its_cell_outlives_the_entry(program: str) -> None:
    # MatchTableAbstract::apply_action: the meter only on a hit; its cell is the entry's
    # index, neither reset at delete nor at insert
    d = Diff(program)
    t = d.table("t_dmeter")
    metered = d.e.action_of(t, "DiffIngress.metered")
    a = d.e.insert(t, [(7, 0xFF)], 0, metered, [0x55])
    d.e.insert(t, [(8, 0xFF)], 0, metered, [0x56])
    d.e.commit()
    d.e.set_direct_meter(t, a, (0, 0, 0, 0))  # no token ever: RED
    assert d.field(DCOLOR, k_opt=7) == 2
    assert d.field(DCOLOR, k_opt=8) == 0  # unconfigured: GREEN
    assert d.field(DCOLOR, k_opt=9) == 0  # a miss: not executed
    d.e.delete(t, a)
    again = d.e.insert(t, [(9, 0xFF)], 0, metered, [0x57])  # index 0 again
    d.e.commit()
    assert d.e.direct_meter(t, again) == (0, 0, 0, 0)
    assert d.field(DCOLOR, k_opt=9) == 2


def test_references_are_counted_as_bmv2_counts_them(program: str) -> None:
    # MatchTableIndirect(WS)::add_entry(_ws) refuses an empty group (EMPTY_GRP), counts the
    # reference before the match unit adds the entry and keeps it when that fails (a table
    # keyed by selector fields only takes no entry); modify_entry_ws releases the old
    # reference before refusing an empty group
    d = Diff(program)
    p, t = d.profile("groups"), d.table("t_select")
    m = d.member("groups", "t_select", 1)
    empty = d.e.group_create(p)
    with pytest.raises(ValueError, match="empty"):
        d.e.insert_indirect(t, [(0, 0)], 1, GROUP, empty, 1, 1, b"", 0)
    d.e.group_delete(p, empty)  # nothing names it
    # BMv2 makes a group in a profile without a selector; its table's `_ws` calls fail
    mp = d.profile("members")
    d.e.group_member(mp, d.e.group_create(mp), d.member("members", "t_profile", 3), True)
    with pytest.raises(ValueError, match="no selector"):
        d.e.insert_indirect(d.table("t_profile"), [(1, 0xFFFF)], 0, GROUP, 0, 0, 1, b"", 0)
    e = d.e.profile_index("DiffIngress.ecmp")
    em = d.member("ecmp", "t_ecmp", 2)
    with pytest.raises(ValueError, match="no match key"):
        d.e.insert_indirect(d.table("t_ecmp"), [], 0, MEMBER, em, 0, 1, b"", 0)
    with pytest.raises(ValueError, match="still used"):  # the refused entry's reference stays
        d.e.member_delete(e, em)
    g, empty = d.e.group_create(p), d.e.group_create(p)
    d.e.group_member(p, g, m, True)
    h = d.e.insert_indirect(t, [(0, 0)], 1, GROUP, g, 1, 1, b"", 0)
    with pytest.raises(ValueError, match="empty"):
        d.e.modify_indirect(t, h, GROUP, empty, 2, b"", 0)
    d.e.group_delete(p, g)  # released by the refused modify, though the entry still names it
    d.e.commit()
    # BMv2 keeps a deleted group's members (GroupMgr) and a deleted member's action
    # (action_entries) until the handle is taken again: the entry runs them
    assert d.last_tag() == 1
    d.e.member_delete(p, m)
    assert d.last_tag() == 1
    d.member("groups", "t_select", 9)  # takes m's handle: its action now
    assert d.last_tag() == 9
