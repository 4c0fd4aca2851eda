"""Collisions no database constraint can see, each refused naming the object it collides with.

* UE pools of two tenants must not overlap: a UE address (the innermost source address the
  rules match on) would otherwise belong to two tenants at once.
* Two service classes of one slice must not claim the same packets: ports that overlap, with
  DSCP values and protocols that can both match, would send one flow to two lanes (the
  compiler would keep whichever rule comes first, silently).
* An IMSI names one UE in the whole deployment: the same IMSI under two tenants would put
  one subscriber into two tenants' slices.

Services raise domain errors (``services.errors``); the API turns them into problem+json.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Network
from typing import Any, NoReturn

from sqlalchemy import ColumnElement, ScalarSelect, cast, func, select, text
from sqlalchemy.dialects.postgresql import CIDR
from sqlalchemy.orm import Session

from sliceportal.models import Subscriber, Tenant
from sliceportal.services.errors import ConflictError, FieldIssue, InvalidError

POOL_LOCK = 7402  # advisory lock key: one writer of UE pools at a time (checked, not constrained)
IMSI_LOCK = 7403  # advisory lock key space of IMSIs (per IMSI hash)


def lock_ue_pools(session: Session) -> None:
    """Serialise tenant writes that set a UE pool, so two overlapping pools cannot both pass the check."""
    session.execute(text("SELECT pg_advisory_xact_lock(:k)"), {"k": POOL_LOCK})


def imsi_lock(imsi: str) -> ColumnElement[Any]:
    """The expression that serialises writers of one IMSI across tenants (the unique
    constraint is per tenant only): selected in the statement that takes a write's other
    locks, so the locks cost one round trip."""
    return func.pg_advisory_xact_lock(IMSI_LOCK, func.hashtext(imsi))


def check_ue_pool(session: Session, pool: IPv4Network | None, own_tenant_id: int | None) -> None:
    """Refuse ``pool`` when it overlaps another tenant's UE pool (409 on ``ue_pool``)."""
    if pool is None:
        return
    # inet && inet: either network contains the other (PostgreSQL network operators)
    stmt = select(Tenant).where(Tenant.ue_pool.is_not(None), Tenant.ue_pool.op("&&")(cast(str(pool), CIDR)))
    if own_tenant_id is not None:
        stmt = stmt.where(Tenant.id != own_tenant_id)
    other = session.scalars(stmt.order_by(Tenant.id).limit(1)).first()
    if other is not None:
        message = (
            f"UE pool {pool} overlaps the UE pool {other.ue_pool} of tenant {other.name}; "
            "choose a pool no other tenant uses"
        )
        raise ConflictError(message, field="ue_pool", title="UE pool overlaps another tenant's")


def imsi_in_use(imsi: str) -> str:
    """What a caller scoped to one tenant learns of an IMSI another tenant holds: that it is
    taken, never by whom (the subscriber id and tenant name are another tenant's identities)."""
    return f"IMSI {imsi} is already in use; an IMSI names one UE"


def imsi_holder(imsi: str, own_subscriber_id: int | None) -> ScalarSelect[int]:
    """The id of another subscriber, in any tenant, that has ``imsi`` (NULL when none): a
    subquery, so a write checks it in the same statement as its other clashes."""
    stmt = select(Subscriber.id).where(Subscriber.imsi == imsi)
    if own_subscriber_id is not None:
        stmt = stmt.where(Subscriber.id != own_subscriber_id)
    return stmt.limit(1).scalar_subquery()


def refuse_imsi(session: Session, imsi: str, holder_id: int, *, tenant_scope: int | None = None) -> NoReturn:
    """Refuse ``imsi``, held by subscriber ``holder_id`` (409 on ``imsi``).

    ``tenant_scope``: the caller sees only this tenant (a tenant-bound key); a clash with
    another tenant's subscriber is then answered without naming it."""
    row = session.execute(
        select(Tenant.name, Tenant.id)
        .join(Subscriber, Subscriber.tenant_id == Tenant.id)
        .where(Subscriber.id == holder_id)
    ).first()
    if row is None or (tenant_scope is not None and row[1] != tenant_scope):
        raise ConflictError(imsi_in_use(imsi), field="imsi", title="IMSI already in use")
    raise ConflictError(
        f"IMSI {imsi} is already subscriber {holder_id} of tenant {row[0]}; an IMSI names one UE",
        field="imsi",
        title="IMSI already in use",
    )


def check_tenant_unique(
    session: Session,
    own_tenant_id: int | None,
    *,
    name: str | None,
    vni: int | None,
    vlan: int | None,
    pool: IPv4Network | None,
) -> None:
    """Every clash of a tenant's unique fields in one 409 (#29): name, VNI, VLAN taken and a UE
    pool that overlaps another tenant's, each on its own field, in the words of the constraints'
    messages (api/errors.py), which stay as the backstop of a concurrent write. Tenants are
    written by operators only, so the pool's clash may name the other tenant."""
    issues: list[FieldIssue] = []
    others = select(Tenant)
    if own_tenant_id is not None:
        others = others.where(Tenant.id != own_tenant_id)
    if name is not None and session.scalar(others.where(Tenant.name == name).limit(1)) is not None:
        issues.append(FieldIssue("name", f"Tenant name {name} is already in use; choose another."))
    if vni is not None and session.scalar(others.where(Tenant.vni == vni).limit(1)) is not None:
        issues.append(FieldIssue("vni", f"VXLAN VNI {vni} is already in use; choose another."))
    if vlan is not None and session.scalar(others.where(Tenant.vlan == vlan).limit(1)) is not None:
        issues.append(FieldIssue("vlan", f"VLAN ID {vlan} is already in use; choose another."))
    try:
        check_ue_pool(session, pool, own_tenant_id)
    except ConflictError as exc:
        if not issues:
            raise  # the pool alone: its own title
        issues.extend(exc.issues)
    if issues:
        raise ConflictError("; ".join(i.message for i in issues), issues=issues)


@dataclass(frozen=True)
class ServiceMatch:
    """What a service class matches on, as stored: port ranges ([] any), DSCP values ([] any), protocol."""

    name: str
    dst_ports: Sequence[tuple[int, int]]
    dscp: Sequence[int]
    protocol: str


def _port_overlap(a: ServiceMatch, b: ServiceMatch) -> tuple[int, int] | None:
    for alo, ahi in a.dst_ports:
        for blo, bhi in b.dst_ports:
            lo, hi = max(alo, blo), min(ahi, bhi)
            if lo <= hi:
                return lo, hi
    return None


def overlap(a: ServiceMatch, b: ServiceMatch) -> str | None:
    """The ports two services both claim for some packet, in words; None when they cannot collide.

    Only explicit port ranges count: a service without ports (any port) is a catch-all on its
    DSCP values, which a more specific service refines by design.
    """
    ports = _port_overlap(a, b)
    if ports is None:
        return None
    if a.dscp and b.dscp and not set(a.dscp) & set(b.dscp):
        return None  # the same ports, told apart by DSCP
    if "any" not in (a.protocol, b.protocol) and a.protocol != b.protocol:
        return None  # the same ports, one UDP and one TCP
    lo, hi = ports
    return f"port {lo}" if lo == hi else f"ports {lo}-{hi}"


def check_services_disjoint(services: Sequence[tuple[str, ServiceMatch]]) -> None:
    """Refuse service classes of one request that claim the same packets (422, field per service)."""
    issues: list[FieldIssue] = []
    for j, (path, svc) in enumerate(services):
        for _, other in services[:j]:
            clash = overlap(svc, other)
            if clash:
                issues.append(
                    FieldIssue(f"{path}.dst_ports", f"service {svc.name} overlaps service {other.name} on {clash}")
                )
                break
    if issues:
        raise InvalidError("; ".join(i.message for i in issues), issues=issues, title="Service port ranges overlap")


def check_service_against(svc: ServiceMatch, siblings: Sequence[ServiceMatch], slice_name: str) -> None:
    """Refuse a new or changed service that claims packets a sibling in the slice already claims (409)."""
    for other in siblings:
        clash = overlap(svc, other)
        if clash:
            raise ConflictError(
                f"service {svc.name} overlaps service {other.name} of slice {slice_name} on {clash}; "
                "give it ports, DSCP values or a protocol of its own",
                field="dst_ports",
                title="Service port ranges overlap",
            )
