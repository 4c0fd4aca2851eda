"""IR rules -> TCAM entries of the RTL, and back (the driver's native normal form).

The key is the innermost {src_ip, dst_ip, dscp, dst_port} (86 bits; seed 000 counts 83
because it keeps 3 DSCP bits, we keep all 6 so any IR DSCP mask is exact). A wildcard
field is value 0 / mask 0. The plan lists entries in IR rule order; on the card each sits in
a TCAM slot, and slots rise along that order (``slots.py``): lowest slot wins in the RTL
exactly as the first matching rule wins in ``RuleIR.classify``. A slot between entries is
*free*: its value has a 1 where its mask has a 0, which no key can match (the RTL compares
``key & mask == value``), so a free slot needs no valid bit.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from sliceportal.rules.ir import FIELD_WIDTHS, RuleIR

KEY_FIELDS = ("src_ip", "dst_ip", "dst_port", "dscp")


class FieldValues(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    src_ip: int = Field(0, ge=0, lt=1 << 32)
    dst_ip: int = Field(0, ge=0, lt=1 << 32)
    dst_port: int = Field(0, ge=0, lt=1 << 16)
    dscp: int = Field(0, ge=0, lt=1 << 6)


class EntryAction(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")

    slice_id: int = Field(ge=0, lt=256)
    lane: int = Field(ge=0, lt=256)
    rr_path: int = Field(ge=0, lt=256)


class TcamEntry(BaseModel):
    """One TCAM entry; ``value & ~mask == 0`` in every field (checked)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    key: FieldValues
    mask: FieldValues
    action: EntryAction

    def model_post_init(self, _: Any) -> None:
        for name in KEY_FIELDS:
            if getattr(self.key, name) & ~getattr(self.mask, name):
                raise ValueError(f"{name}: value has bits outside its mask")

    def words(self) -> list[int]:
        """The seven 32-bit register words of this entry (sp_tcam layout)."""
        k, m, a = self.key, self.mask, self.action
        return [
            k.src_ip,
            k.dst_ip,
            (k.dscp << 16) | k.dst_port,
            m.src_ip,
            m.dst_ip,
            (m.dscp << 16) | m.dst_port,
            (a.slice_id << 16) | (a.lane << 8) | a.rr_path,
        ]

    @classmethod
    def from_words(cls, words: Sequence[int]) -> TcamEntry:
        def fields(src: int, dst: int, low: int) -> FieldValues:
            return FieldValues(src_ip=src, dst_ip=dst, dscp=(low >> 16) & 0x3F, dst_port=low & 0xFFFF)

        action = words[6]
        return cls(
            key=fields(*words[0:3]),
            mask=fields(*words[3:6]),
            action=EntryAction(slice_id=(action >> 16) & 0xFF, lane=(action >> 8) & 0xFF, rr_path=action & 0xFF),
        )

    def native(self) -> dict[str, Any]:
        return self.model_dump()

    def key_bits(self) -> tuple[int, int]:
        """(value, mask) as the RTL's 86-bit key."""
        return pack_key(self.key), pack_key(self.mask)


# A free slot: src_ip value all ones under a zero mask (any value bit outside the mask would do).
FREE_WORDS = (0xFFFF_FFFF, 0, 0, 0, 0, 0, 0)
_FREEING = (0, 3)  # key and mask word of src_ip: these two alone make any slot free
_LOW_WORD = 0x3F_FFFF  # key word 2 holds 22 bits: {dscp[21:16], dst_port[15:0]}


def slot_writes(have: Sequence[int], want: TcamEntry | None) -> list[tuple[int, int]]:
    """(word, value) writes that turn a slot holding the words ``have`` into ``want`` (None:
    free): only the words that differ, and nothing for a free slot that already never matches."""
    if want is None:
        if decode_slot(have) is None:
            return []
        return [(w, FREE_WORDS[w]) for w in _FREEING if have[w] != FREE_WORDS[w]]
    return [(w, v) for w, v in enumerate(want.words()) if have[w] != v]


def decode_slot(words: Sequence[int]) -> TcamEntry | None:
    """A slot read back from the card; None when it can never match (free)."""
    outside = (words[0] & ~words[3], words[1] & ~words[4], words[2] & ~words[5] & _LOW_WORD)
    return None if any(outside) else TcamEntry.from_words(words)


def pack_key(v: FieldValues) -> int:
    return (v.src_ip << 54) | (v.dst_ip << 22) | (v.dscp << 16) | v.dst_port


def lower_rules(ir: RuleIR) -> list[TcamEntry]:
    """One entry per rule, in rule order. Callers check capacity and match fields first."""
    entries = []
    for rule in ir.rules:
        key: dict[str, int] = {}
        mask: dict[str, int] = {}
        for name, t in rule.match.items():
            if name not in KEY_FIELDS:
                raise ValueError(f"field {name!r} is not part of the TCAM key")
            if t.mask >> FIELD_WIDTHS[name]:
                raise ValueError(f"field {name!r}: mask wider than {FIELD_WIDTHS[name]} bits")
            key[name], mask[name] = t.value, t.mask
        a = rule.action
        entries.append(
            TcamEntry(
                key=FieldValues(**key),
                mask=FieldValues(**mask),
                action=EntryAction(slice_id=a.slice_id, lane=a.lane, rr_path=a.rr_path),
            )
        )
    return entries
