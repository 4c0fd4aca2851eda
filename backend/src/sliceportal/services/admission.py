"""Admission control: do the slices on a backend's egress link keep their promises?

Runs before anything is written: when a slice is created or edited (for every backend it
is assigned to) and when a backend is deployed. The numbers come from
``rules.admission`` (seed 004 §V-B, Eq. 1-3): the guaranteed rates on the link must add up
to no more than its capacity (``Backend.link_bps``), and every lane's worst-case delay must
be within its slice's delay bound (``max_delay_ms``, which is also the slice's vQueue burst
limit, so its burst is rate limit x max delay).

A refusal is an ``AdmissionError`` (409): its ``extensions["admission"]`` carries the whole
computation per backend (each term, the sum, the limit, the slices), and its issues name the
SLA fields to change. An operator may override with a reason; the override is audited with
the same computation, and when it concerns a slice the reason stays on the slice
(``Slice.admission_override``): that slice's failing verdicts are then shown as ``waived``
and refuse nothing else on the link, until the slice is edited again without an override.

Slices without a rate limit are not policed by any vQueue: Eq. 1-3
cannot bound what they send, so they appear in the computation as ``unpoliced`` and only
their guaranteed rate counts (docs/rules.md, "Admission control").
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Any, Literal

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.models import Backend, Slice, Subscriber, Tenant
from sliceportal.models.audit import record
from sliceportal.models.slicing import slice_backend
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.rules.admission import Admission, PortLoad, SliceDemand, SliceVerdict, admit, port_loads
from sliceportal.rules.ir import fold_lane
from sliceportal.services.errors import ConflictError, FieldIssue, InvalidError

MBIT = 1_000_000
OVERRIDE_MAX = 500  # characters of an override reason


@dataclass(frozen=True)
class Override:
    """An operator's decision to admit what the computation refuses, and why (audited)."""

    reason: str


class AdmissionError(ConflictError):
    """409: the slices on a link do not fit; ``extensions`` carry the computation."""

    def __init__(self, detail: str, issues: list[FieldIssue], computation: list[dict[str, Any]]) -> None:
        super().__init__(detail, issues=issues, title="Admission refused")
        self.extensions: dict[str, Any] = {"admission": computation}


def slice_lanes(s: Slice, backend_lanes: int) -> tuple[int, ...]:
    """The backend lanes the slice's traffic uses: its services' lanes, folded onto the backend."""
    lanes = [c.lane for c in s.services] or list(s.slice_type.lanes)
    return tuple(sorted({fold_lane(lane, backend_lanes) for lane in lanes}))


def demand(s: Slice, backend_lanes: int) -> SliceDemand | None:
    """The slice as Eq. 1-3 sees it, or None when no vQueue polices it (no rate limit)."""
    if not s.rate_limit_mbps:
        return None
    lanes = slice_lanes(s, backend_lanes)
    return SliceDemand(
        name=s.name,
        priority=max(lanes),
        rate_limit_bps=s.rate_limit_mbps * MBIT,
        burst_ms=s.max_delay_ms or 0.0,
        delay_bound_ms=s.max_delay_ms,
        guaranteed_bps=(s.guaranteed_mbps or 0.0) * MBIT,
        lanes=lanes,
    )


def port_bindings(backend: Backend, slices: Sequence[Slice], vlans: Mapping[int, int | None]) -> dict[str, list[Slice]]:
    """port -> the slices whose traffic it carries, for every port with a recorded capacity.

    The port roles of seed 002 as the backend's options record them (``access_ports``: port ->
    tenant VLAN ID, the P4Runtime backend's tenant VLAN mode): an access port is exclusive to
    the tenant with that VLAN, so only that tenant's slices count on it. Every other port (a
    trunk, the uplink, the egress port of a data plane without port roles) is shared: every
    slice on the backend counts on it (a safe upper bound, as for the link).
    """
    access = {str(p): v for p, v in (backend.options.get("access_ports") or {}).items()}
    return {
        port: [s for s in slices if port not in access or vlans.get(s.tenant_id) == access[port]]
        for port in backend.port_bps
    }


@dataclass(frozen=True)
class Members:
    """A slice's subscribers that carry their own guarantee (Subscriber.guaranteed_bps)."""

    count: int
    sum_bps: float


# Which request the refusal's field issues speak to: a slice's SLA, a backend's capacities,
# or a subscriber's guarantee / memberships.
Fields = Literal["slice", "backend", "subscriber"]
_FIELD = {
    "guaranteed": {"slice": "sla.guaranteed_mbps", "backend": "link_bps", "subscriber": "guaranteed_bps"},
    "delay": {"slice": "sla.max_delay_ms", "backend": "link_bps", "subscriber": "slice_ids"},  # never for subscribers
    "members": {"slice": "sla.rate_limit_mbps", "backend": "link_bps", "subscriber": "guaranteed_bps"},
}


@dataclass(frozen=True)
class BackendAdmission:
    backend: Backend
    slices: tuple[Slice, ...]
    result: Admission
    unpoliced: tuple[Slice, ...]
    ports: tuple[PortLoad, ...] = ()  # terms keyed by slice id (str)
    bound: Mapping[str, Sequence[Slice]] = field(default_factory=dict)  # port -> its slices
    members: Mapping[int, Members] = field(default_factory=dict)  # slice id -> its guaranteed subscribers

    def guarantee_bps(self, s: Slice) -> float:
        """What the slice promises on the link: its own guarantee, or its subscribers' sum when larger
        (each subscriber's guarantee is a promise inside the slice, so the slice needs at least their sum)."""
        m = self.members.get(s.id)
        return max((s.guaranteed_mbps or 0.0) * MBIT, m.sum_bps if m else 0.0)

    @property
    def guaranteed_bps(self) -> float:
        return sum(self.guarantee_bps(s) for s in self.slices)

    def members_ok(self, s: Slice) -> bool:
        """The slice's vQueue (rate limit) lets its subscribers' guarantees through."""
        m = self.members.get(s.id)
        return m is None or not s.rate_limit_mbps or m.sum_bps <= s.rate_limit_mbps * MBIT

    def _term(self, s: Slice) -> str:
        m = self.members.get(s.id)
        by = f", {m.count} subscribers" if m and m.sum_bps > (s.guaranteed_mbps or 0.0) * MBIT else ""
        return f"{self.guarantee_bps(s) / MBIT:g} ({s.name}{by})"

    def waived_port(self, p: PortLoad) -> bool:
        """A port's overbooking an operator admitted for one of the guaranteed slices on it stands."""
        waived = {str(s.id) for s in self.slices if s.admission_override}
        return not p.ok and any(key in waived for key, _ in p.terms)

    @property
    def ports_ok(self) -> bool:
        return all(p.ok or self.waived_port(p) for p in self.ports)

    @property
    def waived(self) -> frozenset[str]:
        """Slices an operator admitted over a refusal (their verdicts do not refuse)."""
        return frozenset(s.name for s in self.slices if s.admission_override)

    @property
    def guarantees_ok(self) -> bool:
        # an overbooking an operator admitted for one of the guaranteed slices stands
        return self.guaranteed_bps <= self.backend.link_bps or any(
            self.guarantee_bps(s) and s.name in self.waived for s in self.slices
        )

    def is_waived(self, v: SliceVerdict) -> bool:
        """A failing verdict stands when an admitted slice is in it (the slice or one of its busy periods)."""
        return not v.ok and (v.name in self.waived or any(t.of in self.waived for t in v.terms))

    @property
    def rates_ok(self) -> bool:
        """Every guarantee fits: the link, each port, each slice's rate limit for its subscribers'."""
        return (
            self.guarantees_ok
            and self.ports_ok
            and all(self.members_ok(s) or s.admission_override for s in self.slices)
        )

    @property
    def ok(self) -> bool:
        return self.rates_ok and all(v.ok or self.is_waived(v) for v in self.result.slices)

    def computation(self) -> dict[str, Any]:
        """Every number of the verdict, for the 409 and the UI."""
        by_name = {s.name: s for s in self.slices}
        by_id = {str(s.id): s for s in self.slices}
        return {
            "backend_id": self.backend.id,
            "backend_name": self.backend.name,
            "capacity_bps": self.backend.link_bps,
            "ok": self.ok,
            "guaranteed": {
                "terms": [
                    {
                        "slice_id": s.id,
                        "slice_name": s.name,
                        "guaranteed_bps": self.guarantee_bps(s),
                        "slice_guaranteed_bps": (s.guaranteed_mbps or 0.0) * MBIT,
                        "subscribers": self.members[s.id].count if s.id in self.members else 0,
                        "subscribers_bps": self.members[s.id].sum_bps if s.id in self.members else 0.0,
                    }
                    for s in self.slices
                    if self.guarantee_bps(s)
                ],
                "sum_bps": self.guaranteed_bps,
                "limit_bps": self.backend.link_bps,
                "ok": self.guaranteed_bps <= self.backend.link_bps,
                "waived": self.guaranteed_bps > self.backend.link_bps and self.guarantees_ok,
            },
            "delay": [
                {
                    "slice_id": by_name[v.name].id,
                    "slice_name": v.name,
                    "lane": v.lane,
                    "worst_delay_ms": _finite(v.worst_delay_ms),
                    "delay_bound_ms": v.delay_bound_ms,
                    "ok": v.ok,
                    "waived": self.is_waived(v),
                    "terms": [
                        {
                            "slice_id": by_name[t.of].id,
                            "slice_name": t.of,
                            "lane": t.priority,
                            "burst_bits": t.burst_bits,
                            "residual_bps": t.residual_bps,
                            "ms": _finite(t.ms),
                        }
                        for t in v.terms
                    ],
                }
                for v in self.result.slices
            ],
            "ports": [
                {
                    "port": p.port,
                    "capacity_bps": p.capacity_bps,
                    "sum_bps": p.guaranteed_bps,
                    "ok": p.ok,
                    "waived": self.waived_port(p),
                    "slices": [{"slice_id": s.id, "slice_name": s.name} for s in self.bound.get(p.port, ())],
                    "terms": [
                        {"slice_id": by_id[key].id, "slice_name": by_id[key].name, "guaranteed_bps": bps}
                        for key, bps in p.terms
                    ],
                }
                for p in self.ports
            ],
            "subscribers": [
                {
                    "slice_id": s.id,
                    "slice_name": s.name,
                    "count": self.members[s.id].count,
                    "sum_bps": self.members[s.id].sum_bps,
                    "rate_limit_bps": s.rate_limit_mbps * MBIT if s.rate_limit_mbps else None,
                    "ok": self.members_ok(s),
                    "waived": not self.members_ok(s) and bool(s.admission_override),
                }
                for s in self.slices
                if s.id in self.members
            ],
            "unpoliced": [
                {
                    "slice_id": s.id,
                    "slice_name": s.name,
                    "why": "no rate limit: no vQueue bounds its burst, so Eq. 1-3 cannot include it",
                }
                for s in self.unpoliced
            ],
        }

    def refusals(self, fields: Fields = "slice") -> tuple[list[str], list[FieldIssue]]:
        """Human sentences with the numbers, and the fields of the request (``fields``) they concern."""
        where = f"on backend {self.backend.name} ({self.backend.link_bps / MBIT:g} Mbit/s)"
        text: list[str] = []
        issues: list[FieldIssue] = []
        if not self.guarantees_ok:
            parts = " + ".join(self._term(s) for s in self.slices if self.guarantee_bps(s))
            msg = (
                f"guaranteed rates {where}: {parts} = {self.guaranteed_bps / MBIT:g} Mbit/s exceed the link's "
                f"{self.backend.link_bps / MBIT:g} Mbit/s"
            )
            text.append(msg)
            issues.append(FieldIssue(_FIELD["guaranteed"][fields], msg))
        by_id = {str(s.id): s for s in self.slices}
        for p in self.ports:
            if p.ok or self.waived_port(p):
                continue
            parts = " + ".join(self._term(by_id[key]) for key, _ in p.terms)
            msg = (
                f"guaranteed rates on port {p.port} of backend {self.backend.name}: {parts} = "
                f"{p.guaranteed_bps / MBIT:g} Mbit/s exceed the port's {p.capacity_bps / MBIT:g} Mbit/s"
            )
            text.append(msg)
            on = f"port_bps.{p.port}" if fields == "backend" else _FIELD["guaranteed"][fields]
            issues.append(FieldIssue(on, msg))
        for v in self.result.slices:
            if v.ok or self.is_waived(v) or fields == "subscriber":  # guarantees move no delay (see check)
                continue
            parts = " + ".join(
                f"{t.burst_bits / MBIT:g} Mbit / {t.residual_bps / MBIT:g} Mbit/s ({t.of})" for t in v.terms
            )
            worst = _finite(v.worst_delay_ms)
            # unbounded: the rate limits above a busy period take the whole link (Eq. 2 <= 0)
            shown = "unbounded" if worst is None else f"{worst:.3f} ms"
            msg = (
                f"slice {v.name} at lane {v.lane} {where}: worst-case delay {shown} "
                f"= {parts}, above its bound of {v.delay_bound_ms:g} ms"
            )
            text.append(msg)
            issues.append(FieldIssue(_FIELD["delay"][fields], msg))
        for s in self.slices:
            if self.members_ok(s) or s.admission_override:
                continue
            m = self.members[s.id]
            msg = (
                f"slice {s.name}: the guarantees of its {m.count} subscribers add up to {m.sum_bps / MBIT:g} "
                f"Mbit/s, more than its rate limit of {s.rate_limit_mbps:g} Mbit/s"
            )
            text.append(msg)
            issues.append(FieldIssue(_FIELD["members"][fields], msg))
        return text, issues


def _finite(ms: float) -> float | None:
    return None if ms == float("inf") else ms


def assigned_slices(session: Session, backend: Backend) -> list[Slice]:
    return slices_of(session, [backend])[backend.id]


def slices_of(session: Session, backends: Sequence[Backend]) -> dict[int, list[Slice]]:
    """backend id -> the slices assigned to it (by id), in one query for all of ``backends``."""
    out: dict[int, list[Slice]] = {b.id: [] for b in backends}
    rows = session.execute(
        select(slice_backend.c.backend_id, Slice)
        .join(Slice, Slice.id == slice_backend.c.slice_id)
        .where(slice_backend.c.backend_id.in_(list(out)))
        .order_by(Slice.id)
    )
    for backend_id, s in rows:
        out[backend_id].append(s)
    return out


def tenant_vlans(session: Session, slices: Iterable[Slice]) -> dict[int, int | None]:
    """tenant id -> its VLAN ID (which access ports carry its slices)."""
    ids = {s.tenant_id for s in slices}
    if not ids:
        return {}
    return {tid: vlan for tid, vlan in session.execute(select(Tenant.id, Tenant.vlan).where(Tenant.id.in_(ids)))}


def subscriber_guarantees(session: Session, slices: Iterable[Slice]) -> dict[int, Members]:
    """slice id -> its subscribers with a guarantee (count, sum), in one grouped query."""
    ids = sorted({s.id for s in slices})
    if not ids:
        return {}
    rows = session.execute(
        select(subscriber_slice.c.slice_id, func.count(), func.sum(Subscriber.guaranteed_bps))
        .join(Subscriber, Subscriber.id == subscriber_slice.c.subscriber_id)
        .where(subscriber_slice.c.slice_id.in_(ids), Subscriber.guaranteed_bps.is_not(None))
        .group_by(subscriber_slice.c.slice_id)
    )
    return {sid: Members(int(n), float(total)) for sid, n, total in rows}


def evaluate(
    backend: Backend,
    slices: Sequence[Slice],
    vlans: Mapping[int, int | None] | None = None,
    members: Mapping[int, Members] | None = None,
) -> BackendAdmission:
    """Eq. 1-3 and the guarantees for ``slices`` sharing ``backend``'s egress link, and the
    guarantees per port (``vlans``: tenant id -> VLAN ID, for the access ports); ``members``:
    the slices' subscribers with a guarantee of their own."""
    demands, unpoliced = [], []
    for s in slices:
        d = demand(s, backend.lanes)
        if d is None:
            unpoliced.append(s)
        else:
            demands.append(d)
    bound = port_bindings(backend, slices, vlans or {})
    partial = BackendAdmission(
        backend, tuple(slices), admit(demands, backend.link_bps), tuple(unpoliced), bound=bound, members=members or {}
    )
    ports = port_loads(
        backend.port_bps,
        {port: [str(s.id) for s in ss] for port, ss in bound.items()},
        {str(s.id): partial.guarantee_bps(s) for s in slices},
    )
    return replace(partial, ports=ports)


def check(
    session: Session,
    backends: Iterable[Backend],
    *,
    override: Override | None,
    action: str,
    subject: Slice | Backend | Subscriber | None,
    waive: Sequence[Slice] = (),
) -> list[BackendAdmission]:
    """Admission for every backend given, against the slices assigned to it as the session sees them
    (flush first: a slice being created or edited counts with its new values).

    Refuses with ``AdmissionError`` unless ``override`` is given, in which case the override
    and the computation it overrode are audited (``action`` "admission_override"). ``subject``
    None: a bulk import of subscribers (audited against the subscriber table). ``waive``: the
    slices subscribers join with their guarantees; an override admits them as it admits a
    slice (``Slice.admission_override``), so later checks on the link do not refuse them again.
    """
    if isinstance(subject, Slice):
        # this request decides about the slice anew: an earlier override does not carry over
        subject.admission_override = None
    session.flush()
    for obj in list(session.identity_map.values()):
        if isinstance(obj, Slice):  # a service class added / changed by id: reload the lanes it gives
            session.expire(obj, ["services"])
    backends = list({b.id: b for b in backends}.values())
    on = slices_of(session, backends)
    everyone = [s for ss in on.values() for s in ss]
    vlans = tenant_vlans(session, everyone)
    members = subscriber_guarantees(session, everyone)
    results = [evaluate(b, on[b.id], vlans, members) for b in backends]
    fields: Fields = (
        "backend"
        if action == "update" and isinstance(subject, Backend)
        else "subscriber"
        if subject is None or isinstance(subject, Subscriber)
        else "slice"
    )
    # A subscriber's guarantee changes no rate limit or burst, so no worst-case delay: a
    # subscriber change is decided by the rates alone, not refused for a delay it did not move.
    refused = [r for r in results if not (r.rates_ok if fields == "subscriber" else r.ok)]
    if not refused:
        return results
    texts: list[str] = []
    issues: list[FieldIssue] = []
    for r in refused:
        t, i = r.refusals(fields)
        texts += [x for x in t if x not in texts]  # a slice on several backends: its own refusals once
        issues += [x for x in i if x not in issues]
    computation = [r.computation() for r in results]
    if override is None:
        raise AdmissionError(
            "; ".join(texts) + ". Lower the rate limits / guarantees or delay bounds, give the "
            "backend a faster link, or (operators) override with a reason",
            issues,
            computation,
        )
    reason = override.reason.strip()
    if not reason or len(reason) > OVERRIDE_MAX:
        raise InvalidError(
            f"an admission override needs a reason of 1..{OVERRIDE_MAX} characters", field="admission_override"
        )
    for s in [subject] if isinstance(subject, Slice) else waive:
        s.admission_override = reason  # its failing verdicts stand from now on (``waived``)
    record(
        session,
        "admission_override",
        "subscriber" if subject is None else subject.__tablename__,
        None if subject is None else subject.id,
        after={"reason": reason, "action": action, "refusals": texts, "admission": computation},
    )
    return results
