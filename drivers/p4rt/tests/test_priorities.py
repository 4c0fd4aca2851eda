"""lowering.assign_priorities, pure: priorities fall along the IR order, held ones stay while
their rank allows, and a full gap renumbers its neighbourhood only."""

from __future__ import annotations

import itertools
import random

from sliceportal_p4rt.lowering import MAX_PRIORITY, MatchKey, assign_priorities


def key(i: int) -> MatchKey:
    return (("src_ip", i, 0xFFFFFFFF),)


def falls(prios: list[int]) -> bool:
    return all(a > b for a, b in itertools.pairwise(prios)) and all(0 < p <= MAX_PRIORITY for p in prios)


def test_a_fresh_table_falls_with_gaps() -> None:
    prios = assign_priorities([key(i) for i in range(4096)], {})
    assert falls(prios)
    assert min(a - b for a, b in itertools.pairwise(prios)) >= 1 << 12


def test_insertions_at_one_spot_renumber_only_a_neighbourhood() -> None:
    keys = [key(i) for i in range(200)]
    held = dict(zip(keys, assign_priorities(keys, {}), strict=True))
    changed_per_push = []
    for n in range(60):  # always between the same two original rules: the gap runs out
        keys.insert(101, key(10_000 + n))
        prios = assign_priorities(keys, held)
        assert falls(prios)
        changed_per_push.append(sum(1 for k, p in zip(keys, prios, strict=True) if held.get(k) != p))
        held = dict(zip(keys, prios, strict=True))
    assert changed_per_push[:10] == [1] * 10  # halving the gap: only the new entry
    assert max(changed_per_push) < 40  # a renumber touches a neighbourhood, never the table


def test_random_edits_keep_every_entry_whose_rank_holds() -> None:
    rng = random.Random(3)
    keys = [key(i) for i in range(300)]
    held = dict(zip(keys, assign_priorities(keys, {}), strict=True))
    for step in range(200):
        op = rng.choice(["insert", "delete", "move"])
        if op == "insert":
            keys.insert(rng.randint(0, len(keys)), key(1000 + step))
        elif op == "delete":
            keys.pop(rng.randrange(len(keys)))
        else:
            keys.insert(rng.randint(0, len(keys) - 1), keys.pop(rng.randrange(len(keys))))
        prios = assign_priorities(keys, held)
        assert falls(prios)
        changed = sum(1 for k, p in zip(keys, prios, strict=True) if held.get(k) != p)
        assert changed <= 1, (step, op, changed)  # the inserted or moved entry, nothing else
        held = dict(zip(keys, prios, strict=True))
