"""What stable positions (hitless pushes, issue #14 item 4) have in common on every plane: which
entries keep the position the data plane holds them at.

P4 priorities, XDP rule bits and NetFPGA TCAM slots all order the rules; an entry may keep its
position while its rank allows, i.e. the kept entries are a longest run whose held positions
follow the new order. Each driver maps its own positions onto keys that must rise along it.
"""

from __future__ import annotations

import bisect
from collections.abc import Sequence


def longest_rising(keys: Sequence[int], *, strict: bool = True) -> list[int]:
    """Indices, in order, of a longest subsequence of ``keys`` that rises (strictly, or never
    falls with ``strict=False``): patience sorting, O(n log n)."""
    find = bisect.bisect_left if strict else bisect.bisect_right
    tails: list[int] = []  # tails[k]: the smallest key ending a run of length k + 1
    ends: list[int] = []  # index of that run's last element
    back = [-1] * len(keys)
    for i, key in enumerate(keys):
        k = find(tails, key)
        if k == len(tails):
            tails.append(key)
            ends.append(i)
        else:
            tails[k], ends[k] = key, i
        back[i] = ends[k - 1] if k else -1
    out: list[int] = []
    i = ends[-1] if ends else -1
    while i >= 0:
        out.append(i)
        i = back[i]
    return out[::-1]
