"""lowering.assign_priorities, pure: priorities fall along the IR order, held ones stay while
their rank allows, and a full gap renumbers its neighbourhood only; assign_tenant_ids: held
tenant ids stay, new tenants never take an id the switch still holds."""

from __future__ import annotations

import itertools
import random

from sliceportal.rules.ir import TenantEntry
from sliceportal_p4rt.lowering import MAX_PRIORITY, MAX_TENANTS, MatchKey, assign_priorities, assign_tenant_ids


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


# ---- lowering.assign_tenant_ids (stable tenant ids, hitless tenant tables) -------------------


def test_tenant_ids_are_dense_on_a_fresh_switch_and_stable_afterwards() -> None:
    a, b, c, d = (TenantEntry(i, n, 1000 + i, 100 * i) for i, n in enumerate("ABCD", start=1))
    assert assign_tenant_ids([a, b, c], {}) == {1001: 1, 1002: 2, 1003: 3}  # as the dense numbering was
    held = {100: 1, 200: 2, 300: 3}
    # B leaves and D arrives in one push: C keeps 3; D does not take B's 2, which keys B's
    # entries until the push deletes them
    assert assign_tenant_ids([a, c, d], held) == {1001: 1, 1003: 3, 1004: 4}
    # a tenant whose VLAN ID moved is new to the switch
    moved = TenantEntry(3, "C", 1003, 350)
    assert assign_tenant_ids([a, moved], held)[1003] == 4
    # every id bound to someone: a freed one is reused (fits, not hitless)
    full = {10 + i: i for i in range(1, MAX_TENANTS + 1)}
    many = [TenantEntry(i, f"t{i}", 2000 + i, 10 + i) for i in range(2, MAX_TENANTS + 1)]
    ids = assign_tenant_ids([*many, TenantEntry(999, "new", 9999, 4000)], full)
    assert ids[9999] == 1 and len(set(ids.values())) == len(ids)
