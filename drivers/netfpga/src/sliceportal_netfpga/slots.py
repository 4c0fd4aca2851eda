"""Stable TCAM slots (issue #14 item 4: a push of one changed rule writes O(1) entries).

In the RTL the slot *is* the priority (lowest slot wins), so entries sit at rising slots
along the IR order. Packed densely, one rule added or removed would move every entry below
it; instead entries are spread with free slots between them (``tcam.FREE_WORDS``, never
matching), and each entry keeps the slot the card holds it in (same key and mask) as long
as its rank allows: as many held slots as can stay do, and new and re-ranked entries take
free slots between their kept neighbours (``assign_slots``). The gaps shrink as the bank
fills: an insertion into a packed stretch moves the entries up to the nearest free slot, so
its cost grows with the fill, not with the table; at ``capacity`` entries there is none.

The reference is the live bank as read back from the card, never the process's memory;
the push then writes the shadow bank's slots that differ from the layout (driver.py).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from sliceportal.drivers.stable import longest_rising

from .tcam import TcamEntry

Identity = tuple[int, int]  # (value, mask) as the RTL's 86-bit key: what an entry matches


def identity(entry: TcamEntry) -> Identity:
    return entry.key_bits()


def layout(entries: Sequence[TcamEntry], live: Sequence[TcamEntry | None], capacity: int) -> list[TcamEntry | None]:
    """The bank image for ``entries`` (IR order): slot -> entry or None (free), up to the
    last used slot (the bank's COUNT), given what the live bank holds."""
    held: dict[Identity, int] = {}
    for slot, e in enumerate(live):
        if e is not None:
            held.setdefault(identity(e), slot)
    slots = assign_slots([identity(e) for e in entries], held, capacity)
    image: list[TcamEntry | None] = [None] * (slots[-1] + 1 if slots else 0)
    for e, s in zip(entries, slots, strict=True):
        image[s] = e
    return image


def assign_slots(idents: Sequence[Identity], held: Mapping[Identity, int], capacity: int) -> list[int]:
    """Strictly rising slots in [0, capacity) for entries given in IR order, keeping the
    ``held`` slot (identity -> slot on the card) of as many entries as possible.

    Entries j1 < j2 can both stay at slots s1, s2 when the entries between them fit between
    their slots: s2 - s1 >= j2 - j1, i.e. s - j does not fall; the first and last entries
    need room before / after them: 0 <= s - j <= capacity - n. So the kept entries are a
    longest run of held candidates whose s - j never falls within those bounds, and every
    other entry is spread over the free slots between its kept neighbours: an insertion
    into a packed stretch shifts the entries up to the nearest free slot, no further."""
    n = len(idents)
    if n > capacity:
        raise ValueError(f"{n} entries do not fit {capacity} slots")
    seen: set[Identity] = set()
    candidates: list[tuple[int, int]] = []
    for j, k in enumerate(idents):
        s = held.get(k)
        if s is not None and 0 <= s - j <= capacity - n and k not in seen:  # a repeated match is new
            candidates.append((j, s))
            seen.add(k)
    slot: list[int | None] = [None] * n
    for j, s in _longest_rising(candidates):
        slot[j] = s
    j = 0
    while j < n:
        if slot[j] is not None:
            j += 1
            continue
        end = j
        while end < n and slot[end] is None:
            end += 1
        lo = slot[j - 1] if j > 0 else -1
        hi = slot[end] if end < n else capacity
        assert lo is not None and hi is not None
        slot[j:end] = _spread(end - j, lo, hi)
        j = end
    return [s for s in slot if s is not None]


def _spread(k: int, lo: int, hi: int) -> list[int]:
    """``k`` slots strictly inside (lo, hi), evenly spaced (they fit: the kept entries were
    chosen so), leaving free slots on both sides for the next insertion."""
    return [lo + ((t + 1) * (hi - lo) + (k + 1) // 2) // (k + 1) for t in range(k)]  # rounded to nearest


def _longest_rising(pairs: Sequence[tuple[int, int]]) -> list[tuple[int, int]]:
    """A longest subsequence of (position, slot) pairs, positions rising, along which
    slot - position never falls."""
    return [pairs[i] for i in longest_rising([s - j for j, s in pairs], strict=False)]
