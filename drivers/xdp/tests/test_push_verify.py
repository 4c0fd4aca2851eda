"""The push's read-back: a copy is compared with the plan's image byte for byte in the
kernel's order (``DataPlane.mismatched``), and what differs is repaired before the switch,
whether the live copy was edited by hand or the idle copy drifted from the last push."""

from __future__ import annotations

import ipaddress
import random

import pytest

from sliceportal.rules.ir import Action, Match, Rule, RuleIR, Ternary
from sliceportal_xdp import image
from sliceportal_xdp import layout as L
from sliceportal_xdp.driver import Driver

from .conftest import noop

BASE = int(ipaddress.IPv4Address("10.1.0.0"))


def ir(n: int, lane: int = 0) -> RuleIR:
    """``n`` rules on a /32, a TEID and a port: every keyed and array table has entries."""
    rules = tuple(
        Rule(
            Match(
                src_ip=Ternary.exact(BASE + i, 32),
                teid=Ternary.exact(100 + i, 32),
                dst_port=Ternary.exact(5000 + i, 16),
            ),
            Action(1 + i % 3, lane, i % 8),
        )
        for i in range(n)
    )
    return RuleIR(lanes=4, paths=8, rules=rules)


def test_keyed_images_compare_in_any_key_order() -> None:
    rng = random.Random(7)
    want_pairs = [(i.to_bytes(4, "little"), bytes([i % 251]) * 16) for i in range(200)]
    items = list(want_pairs)
    rng.shuffle(items)  # a hash map's batch read comes in bucket order, not ours

    def read(pairs: list[tuple[bytes, bytes]]) -> image.Keyed:
        return image.Keyed.read(b"".join(k for k, _ in pairs), b"".join(v for _, v in pairs), 4, 16)

    want = read(want_pairs)
    assert read(items) == want
    assert read(items).pairs() == want_pairs, "sorted by key, as the plan's image"
    flipped = [*items[:5], (items[5][0], b"\xff" + items[5][1][1:]), *items[6:]]
    assert read(flipped) != want, "one value byte differs"
    assert read(items[1:]) != want, "a wanted key is missing"
    assert read([*items, ((999).to_bytes(4, "little"), bytes(16))]) != want, "a key too many"
    assert read([((999).to_bytes(4, "little"), items[0][1]), *items[1:]]) != want, "a foreign key in place of one"


def test_keyed_diff_deletes_adds_and_modifies_by_key() -> None:
    def keyed(d: dict[int, int]) -> image.Keyed:
        return image.Keyed.read(b"".join(k.to_bytes(4, "little") for k in d), bytes(d.values()), 4, 1)

    old, new = keyed({1: 1, 2: 2, 3: 3, 9: 9}), keyed({0: 5, 2: 2, 3: 4, 10: 10})
    c, modified = image._keyed_change(old, new)
    assert [int.from_bytes(k, "little") for k in map(bytes, c.delete)] == [1, 9]
    assert [(int.from_bytes(k, "little"), v[0]) for k, v in c.put.pairs()] == [(0, 5), (3, 4), (10, 10)]
    assert modified == 1


def test_an_lpm_image_parses_each_prefix() -> None:
    lpm = image._lpm_map([{"prefix": "10.1.2.0/24", "rules": [3]}, {"prefix": "192.0.2.1/32", "rules": [0, 70]}])
    assert lpm.pairs() == [
        (L.LPM_KEY.pack(24, bytes([10, 1, 2, 0])), L.bitmap_bytes(1 << 3)),
        (L.LPM_KEY.pack(32, bytes([192, 0, 2, 1])), L.bitmap_bytes(1 | 1 << 70)),
    ]
    for bad in ("10.1.2.0", "10.1.2/24", "10.1.2.256/24", "10.1.2.0/33", "10.1.2.0/2/4"):
        with pytest.raises(ValueError):
            image._lpm_map([{"prefix": bad, "rules": [1]}])


@pytest.mark.needs_root
def test_a_re_push_repairs_a_hand_edited_live_copy(driver: Driver) -> None:
    plan = driver.lower(ir(40))
    driver.apply(plan, noop)
    dp = driver.dataplane
    live = dp.versions[dp.read_config()[0] & 1]
    want = image.encode(plan.tables)
    assert dp.mismatched(live, want) == []
    prefixes, teids = want["src_ip"], want["teid"]
    assert isinstance(prefixes, image.Keyed) and isinstance(teids, image.Keyed)
    # by hand: one prefix gone, one TEID's rules changed, one port's set cleared
    live.src_ip.delete(prefixes.keys[0].tobytes())
    live.teid.update(teids.keys[0].tobytes(), L.bitmap_bytes(1 << 1000))
    live.mem["dst_port"][5000 * L.BITMAP_BYTES : 5001 * L.BITMAP_BYTES] = bytes(L.BITMAP_BYTES)
    assert dp.mismatched(live, want) == ["src_ip", "teid", "dst_port"]
    res = driver.apply(plan, noop)
    assert (res.added, res.removed, res.modified) == (2, 0, 1)  # what the edit took away or changed
    now = dp.versions[dp.read_config()[0] & 1]
    assert now is not live, "the repair went through the idle copy and a switch"
    assert dp.mismatched(now, want) == []
    assert driver.read_state().tables == plan.tables


@pytest.mark.needs_root
def test_a_drifted_idle_copy_is_rewritten_before_the_switch(driver: Driver) -> None:
    first, second = driver.lower(ir(30)), driver.lower(ir(30, lane=2))
    driver.apply(first, noop)
    driver.apply(second, noop)  # the idle copy now holds (and the driver remembers) ``first``
    dp = driver.dataplane
    idle = dp.versions[1 - (dp.read_config()[0] & 1)]
    want = image.encode(first.tables)
    assert dp.mismatched(idle, want) == []
    # drift the driver cannot know of: a stray prefix and a changed action slot
    idle.src_ip.update(L.LPM_KEY.pack(32, bytes([192, 0, 2, 1])), L.bitmap_bytes(1))
    idle.mem["actions"][: L.ACTION.size] = L.ACTION.pack(7, 3, 7, 0)
    assert dp.mismatched(idle, want) == ["src_ip", "actions"]
    driver.apply(first, noop)
    live = dp.versions[dp.read_config()[0] & 1]
    assert live is idle
    assert dp.mismatched(live, want) == []
    assert driver.read_state().tables == first.tables
