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
  (``Capabilities.match_fields``) -- without them the service would widen to the slice.

Guaranteed rates are reserved by admission control on the link (services/admission.py);
no bundled data plane schedules a minimum rate, which docs/rules.md says.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any, Literal

from sliceportal.drivers.contract import Capabilities
from sliceportal.models import Backend, Slice
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
        why = {"rate_limit": "has no per-slice rate limiter", "ecn": "does not mark ECN",
               "match_dscp": "cannot match on DSCP", "match_dst_port": "cannot match on the L4 port"}[self.capability]
        return (f"slice {self.slice_name}: {self.field} cannot be enforced on backend {self.backend_name} "
                f"({self.driver} {why})")

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "message": self.message}


def gaps(backend: Backend, caps: Capabilities, slices: Sequence[Slice]) -> list[Gap]:
    """Every (slice, SLA field) the data plane behind ``caps`` cannot enforce."""
    out: list[Gap] = []
    accepted = set(backend.accept_unenforced or ())

    def gap(s: Slice, field: str, capability: Capability) -> None:
        out.append(Gap(s.id, s.name, field, capability, backend.id, backend.name, caps.driver,
                       capability in accepted))

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


def refuse_unenforceable(found: Sequence[Gap]) -> None:
    """422 naming every slice, field and backend that is not enforceable and not accepted."""
    refused = [g for g in found if not g.accepted]
    if refused:
        raise InvalidError(
            "; ".join(g.message for g in refused) + ". Remove the attribute from the slice, assign the slice to a "
            "backend that enforces it, or (operators) accept it on the backend (accept_unenforced)",
            title="Not enforceable on this backend",
            issues=[FieldIssue(f"slices.{g.slice_id}.{g.field}", g.message) for g in refused])
