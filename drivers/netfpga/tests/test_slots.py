"""slots.assign_slots, pure: slots rise along the IR order inside the bank, held slots stay
while the rank allows, and one added / removed / re-ranked rule moves a bounded number of
entries whatever the table size (issue #14 item 4)."""

from __future__ import annotations

import itertools
import random

import pytest

from sliceportal_netfpga.slots import Identity, assign_slots


def ids(n: int, base: int = 0) -> list[Identity]:
    return [(base + i, 0xFFFF) for i in range(n)]


def moved(order: list[Identity], held: dict[Identity, int], slots: list[int]) -> int:
    """Entries written at another slot than the one the card holds them in (new ones count)."""
    return sum(1 for k, s in zip(order, slots, strict=True) if held.get(k) != s)


def check(slots: list[int], n: int, capacity: int) -> None:
    assert len(slots) == n
    assert all(a < b for a, b in itertools.pairwise(slots)), slots
    assert not slots or (slots[0] >= 0 and slots[-1] < capacity), slots


def test_first_layout_spreads_the_free_slots_between_the_entries() -> None:
    slots = assign_slots(ids(40), {}, 64)
    check(slots, 40, 64)
    gaps = [b - a - 1 for a, b in zip([-1, *slots], [*slots, 64], strict=True)]
    assert sum(gaps) == 24 and max(gaps) == 1  # 24 free slots, never two together
    assert gaps[0] == 1  # room above the first rule too
    assert assign_slots(ids(64), {}, 64) == list(range(64))  # full: dense


@pytest.mark.parametrize(("n", "capacity"), [(8, 64), (32, 64), (48, 64), (100, 1024), (800, 1024)])
def test_one_rule_added_or_removed_in_the_middle_moves_a_bounded_number_of_entries(n: int, capacity: int) -> None:
    order = ids(n)
    held = dict(zip(order, assign_slots(order, {}, capacity), strict=True))
    added = [*order[: n // 2], (10000, 65535), *order[n // 2 :]]
    slots = assign_slots(added, held, capacity)
    check(slots, n + 1, capacity)
    assert moved(added, held, slots) <= 3  # the new one + a shift up to the nearest free slot
    removed = order[: n // 2] + order[n // 2 + 1 :]
    slots = assign_slots(removed, held, capacity)
    assert moved(removed, held, slots) == 0


def test_an_action_change_keeps_every_slot_and_a_reranked_rule_alone_moves() -> None:
    order = ids(20)
    held = dict(zip(order, assign_slots(order, {}, 64), strict=True))
    assert assign_slots(order, held, 64) == [held[k] for k in order]
    reranked = [order[15], *order[:15], *order[16:]]
    slots = assign_slots(reranked, held, 64)
    check(slots, 20, 64)
    assert moved(reranked, held, slots) == 1


def test_a_packed_stretch_shifts_to_the_nearest_free_slot_only() -> None:
    # slots 0..9 used, 10 free, then 11..29 used; an insertion at the top moves 10 entries
    order = ids(29)
    held = dict(zip(order, [*range(10), *range(11, 30)], strict=True))
    top = [(10_000, 0xFFFF), *order]
    slots = assign_slots(top, held, 30)
    assert slots == list(range(30))
    assert moved(top, held, slots) == 11


def test_a_repeated_match_is_a_new_entry_and_held_slots_outside_the_bank_are_ignored() -> None:
    order = [(1, 1), (2, 2), (1, 1)]
    slots = assign_slots(order, {(1, 1): 0, (2, 2): 5, (3, 3): 99}, 8)
    check(slots, 3, 8)
    assert slots[:2] == [0, 5]
    assert assign_slots([(1, 1)], {(1, 1): 99}, 8) == [4]
    with pytest.raises(ValueError):
        assign_slots(ids(9), {}, 8)


def test_random_edit_chains_keep_the_order_and_move_few_entries() -> None:
    rng = random.Random(14)
    for capacity, fill in ((64, 40), (256, 128)):
        order = ids(fill)
        held = dict(zip(order, assign_slots(order, {}, capacity), strict=True))
        total = 0
        for step in range(300):
            nxt = list(order)
            if len(nxt) <= fill:
                nxt.insert(rng.randrange(len(nxt) + 1), (100_000 + step, 0xFFFF))
            else:
                nxt.pop(rng.randrange(len(nxt)))
            if rng.random() < 0.2:  # and now and then a rule moves up or down
                nxt.insert(rng.randrange(len(nxt)), nxt.pop(rng.randrange(len(nxt))))
            slots = assign_slots(nxt, held, capacity)
            check(slots, len(nxt), capacity)
            total += moved(nxt, held, slots)
            order, held = nxt, dict(zip(nxt, slots, strict=True))
        assert total / 300 < 4, (capacity, total / 300)  # a dense layout moves ~fill / 2 per edit
