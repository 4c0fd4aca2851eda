"""Map images: the bytes one copy of the rule tables holds (or must hold), map by map.

A push works on images, not on the tables' normal form: the plan is packed once
(``encode``), the copy the kernel holds is read back with one batch call per map
(``DataPlane.read_image``), and ``diff`` says exactly which slots to delete and which to
write. So a re-push writes only what changed, an unchanged push writes nothing, and the
read-back check after a write is a byte comparison, not a decode.

An image maps each table name (``VersionMaps.FIELDS``) to either
* ``bytes``: an array map's values in index order (every slot; all-zero = empty), or
* ``Keyed``: a hash / LPM map's keys and values as numpy rows sorted by key.

Keyed maps hold tens of thousands of entries in an expanded plan, so they are packed,
diffed and compared as whole arrays (numpy), never as one Python object per entry.
"""

from __future__ import annotations

import itertools
import mmap
import operator
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from sliceportal.drivers.contract import NativeEntry

from . import layout as L
from .lowering import TUNNEL_FIELDS

Tables = dict[str, list[NativeEntry]]
Rows = npt.NDArray[np.uint8]  # (entries, bytes per entry)

KEYED = ("src_ip", "dst_ip", "vni", "teid", "vlan")
ARRAYS = ("dst_port", "dscp", "special", "actions", "qos", "meta")
KEY_SIZE = {"src_ip": L.LPM_KEY.size, "dst_ip": L.LPM_KEY.size, "vni": 4, "teid": 4, "vlan": 4}
# array maps: (slots, value size)
ARRAY_SHAPE = {
    "dst_port": (L.PORTS, L.BITMAP_BYTES),
    "dscp": (L.DSCPS, L.BITMAP_BYTES),
    "special": (len(L.SPECIAL_SLOTS), L.BITMAP_BYTES),
    "actions": (L.MAX_RULES, L.ACTION.size),
    "qos": (L.MAX_SLICES, L.QOS.size),
    "meta": (1, L.META.size),
}


def _rows(buf: bytes | memoryview, size: int) -> Rows:
    return np.frombuffer(buf, np.uint8).reshape(-1, size)


@dataclass(frozen=True, eq=False)
class Keyed:
    """A hash / LPM map's entries: ``keys`` and ``values`` as rows of bytes, sorted by key
    (``_order``), each key once. Two maps hold the
    same entries exactly when their sorted rows are equal, whatever order a kernel walk
    gave them in."""

    keys: Rows
    values: Rows

    @classmethod
    def of(cls, keys: Rows, values: Rows) -> Keyed:
        """``keys`` / ``values`` sorted by key; a key given twice is refused (a kernel
        never answers one twice, a lowered plan never holds one twice)."""
        if len(keys) != len(values):
            raise ValueError(f"{len(keys)} keys but {len(values)} values")
        order = _order(keys)
        if len(order) < 2 or bool((order[1:] > order[:-1]).all()):
            return cls(keys, values)  # sorted already: a lowered plan, an LPM trie's walk
        perm = np.argsort(order)
        ordered = order[perm]
        if bool((ordered[1:] == ordered[:-1]).any()):
            raise ValueError("a key appears twice")
        return cls(_take(keys, perm), _take(values, perm))

    @classmethod
    def read(cls, keys: bytes | memoryview, values: bytes | memoryview, key_size: int, value_size: int) -> Keyed:
        """A batch read's packed keys and values (kernel order)."""
        return cls.of(_rows(keys, key_size), _rows(values, value_size))

    @classmethod
    def empty(cls, key_size: int, value_size: int = L.BITMAP_BYTES) -> Keyed:
        return cls(np.zeros((0, key_size), np.uint8), np.zeros((0, value_size), np.uint8))

    def __len__(self) -> int:
        return len(self.keys)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Keyed):
            return NotImplemented
        return np.array_equal(self.keys, other.keys) and np.array_equal(self.values, other.values)

    def pairs(self) -> list[tuple[bytes, bytes]]:
        return list(zip(map(bytes, self.keys), map(bytes, self.values), strict=True))


Image = dict[str, bytes | Keyed]


def _take(rows: Rows, perm: npt.NDArray[np.intp]) -> Rows:
    """``rows`` in the order ``perm``, moved 8 bytes at a time where the width allows."""
    if rows.shape[1] % 8:
        return rows[perm]
    return np.ascontiguousarray(rows).view("<u8")[perm].view(np.uint8)


def _order(keys: Rows) -> npt.NDArray[np.uint64]:
    """Each key as one integer to sort on: a tunnel key's value; an LPM key's prefix
    length, then its address (the order ``lower`` lists prefixes in, so a plan's image
    needs no permutation)."""
    k = np.ascontiguousarray(keys)
    if k.shape[1] == 4:
        return k.view("<u4").ravel().astype(np.uint64)
    head, addr = k[:, :4].copy().view("<u4").ravel(), k[:, 4:].copy().view(">u4").ravel()
    return (head.astype(np.uint64) << np.uint64(32)) | addr.astype(np.uint64)


def _bitmaps(entries: list[NativeEntry]) -> Rows:
    """The rule bitmaps of ``entries`` as rows (one bit per rule position)."""
    rules = list(map(operator.itemgetter("rules"), entries))
    n = len(rules)
    counts = np.fromiter(map(len, rules), np.intp, n)
    flat = np.fromiter(itertools.chain.from_iterable(rules), np.int64, int(counts.sum()))
    if flat.size and (flat.min() < 0 or flat.max() >= L.MAX_RULES):
        raise ValueError(f"a rule position is outside 0..{L.MAX_RULES - 1}")
    words = np.zeros((n, L.WORDS), "<u8")
    bits = np.left_shift(np.uint64(1), (flat & 63).astype(np.uint64))
    if flat.size == n and counts.all():  # one rule each, the common case of expanded entries
        words[np.arange(n), flat >> 6] = bits
    else:
        np.bitwise_or.at(words, (np.repeat(np.arange(n), counts), flat >> 6), bits)
    return words.view(np.uint8)


def _bitmap(rules: list[int]) -> bytes:
    bits = 0
    for r in rules:
        bits |= 1 << r
    return bits.to_bytes(L.BITMAP_BYTES, "little")


def _lpm_map(entries: list[NativeEntry]) -> Keyed:
    """An LPM table's image: every "a.b.c.d/len" parsed by one numpy text scan (the "/"
    made a "." so each prefix is five numbers), the keys built as columns."""
    prefixes = list(map(operator.itemgetter("prefix"), entries))
    n = len(prefixes)
    text = ".".join(prefixes)
    nums = np.fromstring(text.replace("/", "."), dtype=np.int64, sep=".") if n else np.zeros(0, np.int64)
    if text.count("/") != n or nums.size != 5 * n:
        raise ValueError("an LPM entry's prefix is not a.b.c.d/length")
    nums = nums.reshape(n, 5)
    if nums.size and (nums.min() < 0 or nums[:, :4].max() > 255 or nums[:, 4].max() > 32):
        raise ValueError("an LPM entry's prefix is out of range")
    keys = np.zeros((n, L.LPM_KEY.size), np.uint8)  # prefixlen (host order), address (network order)
    keys[:, 0] = nums[:, 4]
    keys[:, 4:] = nums[:, :4]
    return Keyed.of(keys, _bitmaps(entries))


def _tunnel_map(entries: list[NativeEntry]) -> Keyed:
    values = list(map(operator.itemgetter("value"), entries))
    if values and not 0 <= min(values) <= max(values) < 1 << 32:
        raise ValueError("a tunnel key is outside 32 bits")
    keys = np.fromiter(values, "<u4", len(values)).view(np.uint8).reshape(-1, 4)
    return Keyed.of(keys, _bitmaps(entries))


def _rle_array(entries: list[NativeEntry], size: int) -> bytes:
    # empty runs (most of the 65 536 ports) as bytes(n): calloc'd, not written twice
    bm = L.BITMAP_BYTES
    data = b"".join(
        _bitmap(r) * n if (r := e["rules"]) else bytes(bm * n) for e in entries if (n := e["last"] - e["first"] + 1)
    )
    if len(data) != size * L.BITMAP_BYTES:
        raise ValueError(f"run-length table covers {len(data) // bm} of {size} entries")
    return data


def encode(tables: Tables) -> Image:
    """The image of ``tables`` (a plan's normal form)."""
    img: Image = {}
    for f in ("src_ip", "dst_ip"):
        img[f] = _lpm_map(tables[f])
    img["dst_port"] = _rle_array(tables["dst_port"], L.PORTS)
    img["dscp"] = _rle_array(tables["dscp"], L.DSCPS)
    for f in TUNNEL_FIELDS:
        img[f] = _tunnel_map(tables[f])
    slots = {e["slot"]: e["rules"] for e in tables["special"]}
    # plans lowered before the *_any sets hold wildcards in every entry instead: still right
    img["special"] = b"".join(_bitmap(slots.get(s, [])) for s in L.SPECIAL_SLOTS)
    qos = {q["slice_id"]: q for q in tables["qos"]}
    acts = bytearray(L.MAX_RULES * L.ACTION.size)
    for a in tables["actions"]:
        flags = L.ACT_LIMITED if a["slice_id"] in qos else 0
        L.ACTION.pack_into(acts, a["rule"] * L.ACTION.size, a["slice_id"], a["lane"], a["rr_path"], flags)
    img["actions"] = bytes(acts)
    q = bytearray(L.MAX_SLICES * L.QOS.size)
    for sid, e in qos.items():
        ecn_ns = e.get("ecn_ns")  # absent in plans lowered before ECN marking
        L.QOS.pack_into(q, sid * L.QOS.size, e["rate_Bps"], e["burst_bytes"], L.ECN_OFF if ecn_ns is None else ecn_ns)
    img["qos"] = bytes(q)
    m = tables["meta"][0]
    span = int(m.get("slots", m["rules"]) or 0)  # plans lowered before stable positions: dense
    img["meta"] = L.META.pack(
        max(1, (span + 63) // 64),
        span,  # sp_meta.rules: the program's bound on a matching position
        m["lanes"],
        m["paths"],
        L.MISS_FIXED if m["miss_mode"] == "fixed" else L.MISS_ALGORITHM1,
        m["miss_lane"],
        m["miss_path"],
        0,
        m["version"].encode(),
    )
    return img


@dataclass
class MapChange:
    """What to do to one map to turn its old image into the new one: keyed maps delete
    the keys ``delete`` and write ``put``; arrays copy the ``slots`` from ``array``."""

    delete: Rows = field(default_factory=lambda: np.zeros((0, 4), np.uint8))
    put: Keyed = field(default_factory=lambda: Keyed.empty(4))
    slots: list[int] = field(default_factory=list)
    array: bytes = b""

    @property
    def writes(self) -> int:
        return len(self.delete) + len(self.put) + len(self.slots)

    def runs(self) -> list[tuple[int, int]]:
        """The changed slots as [first, last] runs (one copy per run)."""
        out: list[tuple[int, int]] = []
        for i in self.slots:
            if out and out[-1][1] == i - 1:
                out[-1] = (out[-1][0], i)
            else:
                out.append((i, i))
        return out


@dataclass
class ImageDiff:
    changes: dict[str, MapChange] = field(default_factory=dict)
    added: int = 0
    removed: int = 0
    modified: int = 0

    @property
    def writes(self) -> int:
        return sum(c.writes for c in self.changes.values())


def _slots(buf: bytes, size: int) -> Rows:
    """An array image as one row per slot, in 8-byte words where the slot size allows."""
    return np.frombuffer(buf, "<u8" if size % 8 == 0 else np.uint8).reshape(-1, size // 8 if size % 8 == 0 else size)


def _changed_slots(old: Rows, new: Rows) -> npt.NDArray[np.intp]:
    """The rows that differ, rising: the differing words of the flat arrays, by row (a
    row-wise any() over 16-word rows costs 3x more on the 65 536-slot port array)."""
    words = np.flatnonzero(old.ravel() != new.ravel()) // old.shape[1]
    first = np.ones(len(words), bool)
    first[1:] = words[1:] != words[:-1]
    rows: npt.NDArray[np.intp] = words[first]
    return rows


def _keyed_change(o: Keyed, n: Keyed) -> tuple[MapChange, int]:
    """The change from ``o`` to ``n`` and how many of its writes modify a key ``o`` has:
    both sorted, so membership is a binary search of one in the other."""
    ko, kn = _order(o.keys), _order(n.keys)
    at = np.minimum(np.searchsorted(ko, kn), max(len(ko) - 1, 0))
    kept = ko[at] == kn if len(ko) else np.zeros(len(kn), bool)
    same = kept.copy()
    same[kept] = (o.values[at[kept]] == n.values[kept]).all(axis=1)
    gone = np.ones(len(ko), bool)
    gone[at[kept]] = False
    put = ~same
    c = MapChange(delete=o.keys[gone], put=Keyed(n.keys[put], n.values[put]))
    return c, int(np.count_nonzero(kept & put))


def diff(old: Image, new: Image) -> ImageDiff:
    """The slot-level changes from ``old`` to ``new``. Counts: keyed maps by key; array
    slots go from or to all zero (added / removed) or from one value to another."""
    d = ImageDiff()
    for f in KEYED:
        o, n = old[f], new[f]
        assert isinstance(o, Keyed) and isinstance(n, Keyed)
        if o == n:  # the common case of a re-push: two array comparisons
            d.changes[f] = MapChange()
            continue
        if not len(o):  # into an empty map (a first push): every entry is new, no search
            d.changes[f] = MapChange(put=n)
            d.added += len(n)
            continue
        c, mod = _keyed_change(o, n)
        d.modified += mod
        d.added += len(c.put) - mod
        d.removed += len(c.delete)
        d.changes[f] = c
    for f in ARRAYS:
        o2, n2 = old[f], new[f]
        assert isinstance(o2, bytes) and isinstance(n2, bytes)
        if o2 == n2:  # one memcmp: the common case of an unchanged array
            d.changes[f] = MapChange(array=n2)
            continue
        size = ARRAY_SHAPE[f][1]
        ro, rn = _slots(o2, size), _slots(n2, size)
        slots = _changed_slots(ro, rn)
        was, now = ro[slots].any(axis=1), rn[slots].any(axis=1)  # non-zero before / after
        d.added += int(np.count_nonzero(~was))
        d.removed += int(np.count_nonzero(~now))
        d.modified += int(np.count_nonzero(was & now))
        d.changes[f] = MapChange(array=n2, slots=slots.tolist())
    return d


def holds(mem: bytes | mmap.mmap, want: bytes) -> bool:
    """Whether ``mem`` starts with ``want``, compared in place (8 bytes at a time where
    the length allows): no copy of an 8 MB mmapped array, unlike a slice of it."""
    word = np.uint64 if len(want) % 8 == 0 else np.uint8
    return np.array_equal(np.frombuffer(mem, word, len(want) // word().itemsize), np.frombuffer(want, word))


def empty() -> Image:
    """The image of a copy that was never written."""
    img: Image = {f: Keyed.empty(KEY_SIZE[f]) for f in KEYED}
    for f, (n, size) in ARRAY_SHAPE.items():
        img[f] = bytes(n * size)
    return img
