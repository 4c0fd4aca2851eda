"""Stored intents -> the compiler's ``IntentSpec``s, resolved against a slice's members.

Kept apart from ``services.intents`` (which deploys) so that ``services.deployments`` can
hand intents to the compiler without an import cycle. An intent's UEs are resolved at every
compile: all of its selectors (IMSI, UE address / prefix, TEID) must hold for a member, so
an intent follows a subscriber whose address changes and never reaches outside its slice.
"""

from __future__ import annotations

import dataclasses
from collections import defaultdict
from collections.abc import Iterable, Sequence
from ipaddress import IPv4Address, IPv4Network

from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models import Intent
from sliceportal.rules.spec import IntentSpec, SliceSpec, SubscriberSpec

MBIT = 1_000_000


def members_named(intent: Intent, members: Iterable[SubscriberSpec]) -> list[SubscriberSpec]:
    """The slice members every selector of ``intent`` names."""
    prefixes = [IPv4Network(p) for p in intent.ue_prefixes]
    imsis, teids = set(intent.imsis), set(intent.teids)
    return [
        m
        for m in members
        if (not imsis or m.imsi in imsis)
        and (not prefixes or any(IPv4Address(m.ue_ip) in n for n in prefixes))
        and (not teids or teids & set(m.teids))
    ]


def intent_spec(intent: Intent, members: Sequence[SubscriberSpec]) -> IntentSpec | None:
    """The compiler's view of ``intent``; None when it names no current member of its slice."""
    ues = members_named(intent, members)
    if not ues:
        return None
    return IntentSpec(
        ref=intent.id,
        ue=tuple((m.ue_ip, m.prefix_len) for m in ues),
        action=intent.action,  # type: ignore[arg-type]  # checked by the column's constraint
        lane=intent.lane,
        rr_path=intent.rr_path,
        teids=tuple(sorted(set(intent.teids))),
        dst_ports=tuple((lo, hi) for lo, hi in intent.dst_ports),
        dscp=tuple(intent.dscp),
        protocol=None if intent.protocol == "any" else intent.protocol,  # type: ignore[arg-type]
        # the rate belongs to rate_limit only (the native form accepts rate_mbps with any action)
        rate_bps=round(intent.rate_mbps * MBIT) if intent.action == "rate_limit" and intent.rate_mbps else None,
    )


def with_intents(session: Session, specs: list[SliceSpec]) -> list[SliceSpec]:
    """``specs`` with each slice's intents attached (one query for all slices)."""
    by_slice: dict[int, list[Intent]] = defaultdict(list)
    if specs:
        for it in session.scalars(
            select(Intent).where(Intent.slice_id.in_([s.ref for s in specs])).order_by(Intent.id)
        ):
            by_slice[it.slice_id].append(it)
    out = []
    for s in specs:
        found = [i for i in (intent_spec(it, s.subscribers) for it in by_slice.get(s.ref, [])) if i is not None]
        out.append(dataclasses.replace(s, intents=tuple(found)) if found else s)
    return out
