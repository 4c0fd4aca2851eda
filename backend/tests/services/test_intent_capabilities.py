"""Capabilities decide for per-flow intents (#14 items 1 and 3): a rate_limit or drop intent
needs the per-slice policer its sub-slice gets; a data plane without one refuses it per
field (``intents.<id>.action``), unless the operator accepted unenforced rate limits on
the backend -- no silent downgrade. Every bundled plane has the policer (their own tests
say so); the refusal is the contract for a driver that has none."""

from __future__ import annotations

import pytest

from sliceportal.drivers.contract import Capabilities
from sliceportal.models import Backend, Intent, Slice
from sliceportal.services.enforcement import intent_gaps, refuse_unenforceable
from sliceportal.services.errors import InvalidError


def caps(rate_limit: bool) -> Capabilities:
    return Capabilities(
        driver="plain",
        lanes=4,
        paths=1,
        match_fields=frozenset({"src_ip"}),
        capacity={"t": 8},
        rate_limit=rate_limit,
        ecn=False,
    )


def world(accepted: list[str]) -> tuple[Backend, Slice, list[Intent]]:
    b = Backend(id=3, name="edge", driver="plain", accept_unenforced=accepted)
    s = Slice(id=5, name="embb")
    intents = [
        Intent(id=n, slice_id=5, action=a) for n, a in ((1, "prioritise"), (2, "rate_limit"), (3, "drop"), (4, "steer"))
    ]
    return b, s, intents


def test_a_plane_without_a_policer_refuses_rate_limit_and_drop_per_field() -> None:
    b, s, intents = world([])
    found = intent_gaps(b, caps(False), s, intents)
    assert [(g.field, g.capability, g.accepted) for g in found] == [
        ("intents.2.action", "rate_limit", False),
        ("intents.3.action", "rate_limit", False),
    ]
    with pytest.raises(InvalidError) as e:
        refuse_unenforceable(found)
    assert [i.field for i in e.value.issues] == ["slices.5.intents.2.action", "slices.5.intents.3.action"]
    assert "cannot be enforced on backend edge" in e.value.detail


def test_a_plane_with_a_policer_or_an_accepting_operator_takes_them() -> None:
    b, s, intents = world([])
    assert intent_gaps(b, caps(True), s, intents) == []
    b, s, intents = world(["rate_limit"])
    found = intent_gaps(b, caps(False), s, intents)
    assert found and all(g.accepted for g in found)
    refuse_unenforceable(found)  # accepted: listed, not refused
