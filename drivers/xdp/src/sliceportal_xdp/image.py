"""Map images: the bytes one copy of the rule tables holds (or must hold), map by map.

A push works on images, not on the tables' normal form: the plan is packed once
(``encode``), the copy the kernel holds is read back with one batch call per map
(``DataPlane.read_image``), and ``diff`` says exactly which slots to delete and which to
write. So a re-push writes only what changed, an unchanged push writes nothing, and the
read-back check after a write is a byte comparison, not a decode.

An image maps each table name (``VersionMaps.FIELDS``) to either
* ``bytes``: an array map's values in index order (every slot; all-zero = empty), or
* ``dict[bytes, bytes]``: a hash / LPM map's keys and values.
"""

from __future__ import annotations

import operator
import socket
import struct
from dataclasses import dataclass, field

from sliceportal.drivers.contract import NativeEntry

from . import layout as L
from .lowering import TUNNEL_FIELDS

Tables = dict[str, list[NativeEntry]]
Image = dict[str, bytes | dict[bytes, bytes]]

KEYED = ("src_ip", "dst_ip", "vni", "teid", "vlan")
ARRAYS = ("dst_port", "dscp", "special", "actions", "qos", "meta")
# array maps: (slots, value size)
ARRAY_SHAPE = {
    "dst_port": (L.PORTS, L.BITMAP_BYTES),
    "dscp": (L.DSCPS, L.BITMAP_BYTES),
    "special": (len(L.SPECIAL_SLOTS), L.BITMAP_BYTES),
    "actions": (L.MAX_RULES, L.ACTION.size),
    "qos": (L.MAX_SLICES, L.QOS.size),
    "meta": (1, L.META.size),
}
_BLOCK = 256  # array slots compared as one slice before looking at single slots
_FIRST = operator.itemgetter(0)


_ONE = [(1 << r).to_bytes(L.BITMAP_BYTES, "little") for r in range(L.MAX_RULES)]


def _bitmap(rules: list[int]) -> bytes:
    if len(rules) == 1:  # the common case of expanded entries: a table lookup
        return _ONE[rules[0]]
    bits = 0
    for r in rules:
        bits |= 1 << r
    return bits.to_bytes(L.BITMAP_BYTES, "little")


_PLEN = [L.LPM_KEY.pack(p, b"\0\0\0\0")[:4] for p in range(33)]
_PLEN_OF = {str(p): k for p, k in enumerate(_PLEN)}  # "24" -> the key's prefixlen word


def _bitmaps(entries: list[NativeEntry]) -> list[bytes]:
    """The rule bitmaps of ``entries``, in order (a single rule, the common case of
    expanded entries, is a table lookup)."""
    one = _ONE
    return [one[r[0]] if len(r) == 1 else _bitmap(r) for r in map(operator.itemgetter("rules"), entries)]


def _lpm_map(entries: list[NativeEntry]) -> dict[bytes, bytes]:
    """An LPM table's image. An expanded plan has tens of thousands of prefixes, so the
    parsing runs in C-level map() pipelines: all prefixes joined and split at "/" give the
    addresses and the prefix lengths in alternation."""
    prefixes = list(map(operator.itemgetter("prefix"), entries))
    parts = "/".join(prefixes).split("/") if prefixes else []
    if len(parts) != 2 * len(prefixes):
        raise ValueError("an LPM entry's prefix is not address/length")
    keys = map(operator.add, map(_PLEN_OF.__getitem__, parts[1::2]), map(socket.inet_aton, parts[0::2]))
    return dict(zip(keys, _bitmaps(entries), strict=True))


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
        keys = map(L.U32.pack, map(operator.itemgetter("value"), tables[f]))
        img[f] = dict(zip(keys, _bitmaps(tables[f]), strict=True))
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
    ``delete`` and write ``keys`` / ``values``; arrays copy the ``slots`` from ``array``."""

    delete: list[bytes] = field(default_factory=list)
    keys: list[bytes] = field(default_factory=list)
    values: list[bytes] = field(default_factory=list)
    slots: list[int] = field(default_factory=list)
    array: bytes = b""

    @property
    def writes(self) -> int:
        return len(self.delete) + len(self.keys) + len(self.slots)

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


def _changed_slots(old: bytes, new: bytes, size: int) -> list[int]:
    """Indices of the ``size``-byte slots that differ (whole blocks compared first:
    an unchanged 8 MB port array costs a few hundred slice comparisons)."""
    if old == new:
        return []
    out: list[int] = []
    step = _BLOCK * size
    for b in range(0, len(new), step):
        if old[b : b + step] == new[b : b + step]:
            continue
        for o in range(b, min(b + step, len(new)), size):
            if old[o : o + size] != new[o : o + size]:
                out.append(o // size)
    return out


def diff(old: Image, new: Image) -> ImageDiff:
    """The slot-level changes from ``old`` to ``new``. Counts: keyed maps by key; array
    slots go from or to all zero (added / removed) or from one value to another."""
    d = ImageDiff()
    for f in KEYED:
        o, n = old[f], new[f]
        assert isinstance(o, dict) and isinstance(n, dict)
        if o == n:  # the common case of a re-push, at C speed
            d.changes[f] = MapChange()
            continue
        if not o:  # into an empty map (a first push): every entry is new, no set algebra
            d.changes[f] = MapChange(keys=list(n), values=list(n.values()))
            d.added += len(n)
            continue
        # set operations on the items views run in C: (key, value) pairs new or changed
        fresh = n.items() - o.items()
        c = MapChange(delete=list(o.keys() - n.keys()), keys=[k for k, _ in fresh], values=[v for _, v in fresh])
        mod = sum(1 for k in c.keys if k in o)
        d.modified += mod
        d.added += len(c.keys) - mod
        d.removed += len(c.delete)
        d.changes[f] = c
    for f in ARRAYS:
        o2, n2 = old[f], new[f]
        assert isinstance(o2, bytes) and isinstance(n2, bytes)
        size = ARRAY_SHAPE[f][1]
        c = MapChange(array=n2, slots=_changed_slots(o2, n2, size))
        zero = bytes(size)
        for i in c.slots:
            ov, nv = o2[i * size : (i + 1) * size], n2[i * size : (i + 1) * size]
            if ov == zero:
                d.added += 1
            elif nv == zero:
                d.removed += 1
            else:
                d.modified += 1
        d.changes[f] = c
    return d


def keyed_holds(keys: memoryview, values: memoryview, key_size: int, want: dict[bytes, bytes]) -> bool:
    """Whether a keyed map's batch read (packed keys and values, kernel order) holds
    exactly ``want``: as many keys, each one wanted (the kernel never repeats a key), and
    the wanted values laid out in the kernel's key order equal to the values read, byte
    for byte. No per-entry objects of the read besides its keys."""
    if len(keys) != key_size * len(want):
        return False
    try:
        expected = b"".join(map(want.__getitem__, map(_FIRST, struct.Struct(f"{key_size}s").iter_unpack(keys))))
    except KeyError:
        return False
    return expected == values.tobytes()


def empty() -> Image:
    """The image of a copy that was never written."""
    img: Image = {f: {} for f in KEYED}
    for f, (n, size) in ARRAY_SHAPE.items():
        img[f] = bytes(n * size)
    return img
