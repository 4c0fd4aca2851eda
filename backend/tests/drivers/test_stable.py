"""The longest rising run that the three drivers' stable positions keep (sliceportal.drivers.stable)."""

from __future__ import annotations

import itertools
import random

import pytest

from sliceportal.drivers.stable import longest_rising


def _brute(keys: list[int], strict: bool) -> int:
    """The length of a longest rising subsequence, by trying every subset (small inputs only)."""
    for n in range(len(keys), 0, -1):
        for idx in itertools.combinations(range(len(keys)), n):
            run = [keys[i] for i in idx]
            if all(a < b if strict else a <= b for a, b in itertools.pairwise(run)):
                return n
    return 0


@pytest.mark.parametrize("strict", [True, False])
def test_the_run_is_a_longest_one_and_rises(strict: bool) -> None:
    rng = random.Random(14)
    for _ in range(300):
        keys = [rng.randrange(6) for _ in range(rng.randrange(0, 10))]
        idx = longest_rising(keys, strict=strict)
        assert idx == sorted(idx)
        run = [keys[i] for i in idx]
        assert all(a < b if strict else a <= b for a, b in itertools.pairwise(run)), (keys, idx)
        assert len(idx) == _brute(keys, strict), keys


def test_equal_keys_stay_together_only_when_not_strict() -> None:
    assert len(longest_rising([3, 3, 3], strict=False)) == 3
    assert len(longest_rising([3, 3, 3])) == 1
    assert longest_rising([]) == []
