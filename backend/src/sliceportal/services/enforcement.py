"""Capabilities decide (#14 item 3): can this backend enforce what each slice's SLA asks for?

Preview and deploy compare every slice's SLA attributes with the driver's ``capabilities()``
and refuse (422, naming slice, field and backend) what the data plane cannot enforce, rather
than showing an SLA as configured while nothing enforces it. An operator may record on the
backend that it carries such slices knowingly (``Backend.accept_unenforced``, audited like
every backend edit); the preview then lists the fields as ``accepted``, never as enforced.

What each attribute needs (docs/rules.md, "Capabilities"):

* ``sla.rate_limit_mbps`` and, with it, ``sla.max_delay_ms`` as the vQueue's burst limit:
  a per-slice rate limiter (``Capabilities.rate_limit``);
* ``sla.ecn_delay_ms``: ECN marking (``Capabilities.ecn``);
* a service's DSCP / port match: the classifier keys ``dscp`` / ``dst_port``
  (``Capabilities.match_fields``) -- without them the service would widen to the slice;
* a per-flow intent ``rate_limit`` or ``drop``: the per-slice rate limiter its sub-slice
  gets (``Capabilities.rate_limit``), field ``intents.<id>.action``.

Guaranteed rates are reserved by admission control on the link (services/admission.py);
no bundled data plane schedules a minimum rate, which docs/rules.md says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.drivers.contract import Capabilities
from sliceportal.models import Backend, Intent, Slice
from sliceportal.services.errors import FieldIssue, InvalidError

Capability = Literal["rate_limit", "ecn", "match_dscp", "match_dst_port"]
CAPABILITIES: tuple[Capability, ...] = ("rate_limit", "ecn", "match_dscp", "match_dst_port")


@dataclass(frozen=True)
class Gap:
    """One SLA attribute of one slice the backend's data plane cannot enforce."""

    slice_id: int
    slice_name: str
    field: str  # the API field, e.g. "sla.ecn_delay_ms" or "services.3.dscp"
    capability: Capability
    backend_id: int
    backend_name: str
    driver: str
    accepted: bool  # the operator recorded on the backend that it carries this knowingly

    @property
    def message(self) -> str:
        why = {
            "rate_limit": "has no per-slice rate limiter",
            "ecn": "does not mark ECN",
            "match_dscp": "cannot match on DSCP",
            "match_dst_port": "cannot match on the L4 port",
        }[self.capability]
        return (
            f"slice {self.slice_name}: {self.field} cannot be enforced on backend {self.backend_name} "
            f"({self.driver} {why})"
        )

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


def gaps(backend: Backend, caps: Capabilities, slices: Sequence[Slice]) -> list[Gap]:
    """Every (slice, SLA field) the data plane behind ``caps`` cannot enforce."""
    out: list[Gap] = []
    accepted = set(backend.accept_unenforced or ())

    def gap(s: Slice, field: str, capability: Capability) -> None:
        out.append(Gap(s.id, s.name, field, capability, backend.id, backend.name, caps.driver, capability in accepted))

    for s in slices:
        if not caps.rate_limit and s.rate_limit_mbps:
            gap(s, "sla.rate_limit_mbps", "rate_limit")
            if s.max_delay_ms:
                gap(s, "sla.max_delay_ms", "rate_limit")  # the vQueue's burst limit needs the limiter
        if not caps.ecn and s.ecn_delay_ms:
            gap(s, "sla.ecn_delay_ms", "ecn")
        for c in s.services:
            if c.dscp and "dscp" not in caps.match_fields:
                gap(s, f"services.{c.id}.dscp", "match_dscp")
            if c.dst_ports and "dst_port" not in caps.match_fields:
                gap(s, f"services.{c.id}.dst_ports", "match_dst_port")
    return out


POLICED_INTENT_ACTIONS = ("rate_limit", "drop")  # enforced by a per-slice policer of the intent's own (a sub-slice)


def intent_gaps(backend: Backend, caps: Capabilities, s: Slice, intents: Sequence[Intent]) -> list[Gap]:
    """A rate_limit / drop intent of slice ``s`` needs the per-slice policer its sub-slice gets
    (docs/rules.md, "Per-flow rate limit and drop"); without one it would silently not hold."""
    if caps.rate_limit:
        return []
    accepted = "rate_limit" in (backend.accept_unenforced or ())
    return [
        Gap(s.id, s.name, f"intents.{i.id}.action", "rate_limit", backend.id, backend.name, caps.driver, accepted)
        for i in intents
        if i.action in POLICED_INTENT_ACTIONS
    ]


def slice_intent_gaps(session: Session, backend: Backend, caps: Capabilities, slices: Sequence[Slice]) -> list[Gap]:
    """``intent_gaps`` for every slice of ``slices`` (one query)."""
    if caps.rate_limit or not slices:
        return []
    by_slice: dict[int, list[Intent]] = {}
    for i in session.scalars(select(Intent).where(Intent.slice_id.in_([s.id for s in slices])).order_by(Intent.id)):
        by_slice.setdefault(i.slice_id, []).append(i)
    return [g for s in slices for g in intent_gaps(backend, caps, s, by_slice.get(s.id, []))]


def refuse_unenforceable(found: Sequence[Gap]) -> None:
    """422 naming every slice, field and backend that is not enforceable and not accepted."""
    refused = [g for g in found if not g.accepted]
    if refused:
        raise InvalidError(
            "; ".join(g.message for g in refused) + ". Remove the attribute from the slice, assign the slice to a "
            "backend that enforces it, or (operators) accept it on the backend (accept_unenforced)",
            title="Not enforceable on this backend",
            issues=[FieldIssue(f"slices.{g.slice_id}.{g.field}", g.message) for g in refused],
        )
