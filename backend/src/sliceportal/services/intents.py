"""Per-flow intents as objects: resolve, check, store, redeploy, delete, explain.

``rules.intents`` parses a message (seed 001 Listing 1 or the native form) into an
``IntentChange``; this module turns it into an ``Intent`` row of one slice after checking
that every UE it names is a subscriber of the caller's tenant and of that slice, that no
other intent asks another action of an overlapping flow (409, both named), and that every
backend of the slice can still compile its configuration with it. Nothing is stored when a
check fails. The entries an intent produced are derived from each backend's rule set in
force (the compiler tags them ``intent #<id>``), never stored with the intent.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Sequence
from dataclasses import dataclass
from ipaddress import IPv4Address, IPv4Network
from typing import Any

from sqlalchemy import any_, literal, select, update
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import Session

from sliceportal.drivers.contract import CapacityError, DriverError
from sliceportal.models import Backend, Deployment, Intent, Slice, Subscriber, Tenant
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.rules.compiler import check_intent, compile_rules, intent_conflicts, intent_ref_of
from sliceportal.rules.errors import AmbiguousMatchError, CompileError
from sliceportal.rules.intents import IntentChange
from sliceportal.rules.ir import FIELD_WIDTHS, Qos
from sliceportal.rules.spec import IntentSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec
from sliceportal.services import deployments as svc
from sliceportal.services import enforcement
from sliceportal.services.backends import POOL
from sliceportal.services.compile_inputs import domain_specs
from sliceportal.services.errors import ConflictError, DomainError, FieldIssue, InvalidError, NotFoundError
from sliceportal.services.intent_specs import MBIT, intent_spec


@dataclass(frozen=True)
class Requester:
    """Who posts: the owner recorded, and the tenant whose objects alone exist for them."""

    user_id: int | None
    name: str
    tenant_scope: int | None


@dataclass(frozen=True)
class BackendEntries:
    backend: Backend
    rule_set: int | None
    rules: list[dict[str, Any]]
    # rate_limit / drop: the intent's sub-slice in the rule set in force (slice_id, qos)
    policer: dict[str, Any] | None = None
    # what the data plane counted for the intent's flows now: the sub-slice's packets and
    # policer drops, else the hits of its rules; None when the backend cannot answer now
    counters: dict[str, Any] | None = None


def request_hash(body: dict[str, Any]) -> str:
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


def replay(session: Session, who: Requester, key: str | None, body: dict[str, Any]) -> Intent | None:
    """The intent a retried POST with the same ``Idempotency-Key`` created; 409 for another body."""
    if key is None:
        return None
    first = session.scalar(select(Intent).where(Intent.owner_id == who.user_id, Intent.idempotency_key == key))
    if first is not None and first.request_hash != request_hash(body):
        raise ConflictError(
            f"Idempotency-Key {key!r} was used for intent {first.id} with another body; "
            "send a new key for a new intent",
            field="Idempotency-Key",
            title="Idempotency conflict",
        )
    return first


def _invalid(detail: str, field: str) -> InvalidError:
    return InvalidError(detail, field=field, title="Intent cannot be applied")


def _ue_text(s: Subscriber) -> str:
    return f"UE {IPv4Address(str(s.ue_ip))} (IMSI {s.imsi})"


def _tenant_and_slice(session: Session, change: IntentChange, who: Requester) -> tuple[int | None, Slice | None]:
    tenant_id = who.tenant_scope
    if change.tenant_vni is not None:
        tenant = session.scalar(select(Tenant).where(Tenant.vni == change.tenant_vni))
        if tenant is None or who.tenant_scope not in (None, tenant.id):
            raise _invalid(f"no tenant has VNI {change.tenant_vni}", "tenant_vni")
        tenant_id = tenant.id
    if change.slice_ref is None:
        return tenant_id, None
    s = session.get(Slice, change.slice_ref)
    if s is None or who.tenant_scope not in (None, s.tenant_id):
        raise _invalid(f"slice {change.slice_ref} does not exist", "slice_ref")
    if tenant_id is not None and s.tenant_id != tenant_id:
        raise _invalid(
            f"slice {change.slice_ref} is not a slice of the tenant with VNI {change.tenant_vni}", "slice_ref"
        )
    return s.tenant_id, s


def _named(session: Session, change: IntentChange, tenant_id: int | None) -> list[Subscriber]:
    """The subscribers every selector names; 422 naming the first selector that names none."""
    of = "" if tenant_id is None else " of this tenant"
    base = select(Subscriber) if tenant_id is None else select(Subscriber).where(Subscriber.tenant_id == tenant_id)
    picks: list[set[int]] = []
    found: dict[int, Subscriber] = {}

    def pick(rows: Sequence[Subscriber], missing: str, field: str) -> None:
        if not rows:
            raise _invalid(f"{missing} is not a subscriber{of}", field)
        found.update((r.id, r) for r in rows)
        picks.append({r.id for r in rows})

    if change.imsis:
        rows = list(session.scalars(base.where(Subscriber.imsi.in_(change.imsis))))
        missing = sorted(set(change.imsis) - {r.imsi for r in rows})
        if missing:
            raise _invalid(f"IMSI {missing[0]} is not a subscriber{of}", "imsi")
        pick(rows, "", "imsi")
    if change.ue is not None:
        rows = list(session.scalars(base.where(Subscriber.ue_ip.op("<<=")(str(IPv4Network(change.ue))))))
        pick(rows, f"UE {change.ue}", "ue")
    if change.teid is not None:
        rows = list(session.scalars(base.where(literal(change.teid) == any_(Subscriber.teids))))
        pick(rows, f"TEID {change.teid:#010x}", "teid")
    if not picks:
        raise _invalid("name the UEs the intent is for: IMSI, UE address / prefix (srcIP / ue) or GTP TEID", "ue")
    ids = set.intersection(*picks)
    if not ids:
        raise _invalid("the IMSI, UE address and TEID given do not name one subscriber together", "ue")
    return [found[i] for i in sorted(ids)]


def _slice_of(change: IntentChange, given: Slice | None, ues: list[Subscriber]) -> Slice:
    """The slice the intent is for. Named UEs (IMSI, TEID, a /32) must all be its members; a
    wider prefix only needs one member -- the compiler clips it to the slice's own UEs."""
    wide = change.ue is not None and change.ue.prefixlen < 32
    member_of = {u.id: {s.id for s in u.slices} for u in ues}
    if given is not None:
        outside = [u for u in ues if given.id not in member_of[u.id]]
        if len(outside) == len(ues) or (outside and not wide):
            raise _invalid(f"{_ue_text(outside[0])} is not a member of slice {given.name!r}", "ue")
        return given
    candidates = set.union(*member_of.values()) if wide else set.intersection(*member_of.values())
    if len(candidates) != 1:
        where = "no slice" if not candidates else f"slices {sorted(candidates)}"
        raise _invalid(f"the UEs named are in {where}; name the slice with slice_ref", "slice_ref")
    (sid,) = candidates
    return next(s for u in ues for s in u.slices if s.id == sid)


def _lane(s: Slice, change: IntentChange) -> int | None:
    if change.lane is None:
        return None
    lanes = list(s.slice_type.lanes)
    if change.lane in lanes:
        return change.lane
    if change.source == "listing1" and change.lane < len(lanes):
        return lanes[change.lane]  # Listing 1's rx_queue n: the type's n-th queue
    raise _invalid(
        f"slice {s.name!r} ({s.slice_type.name}) has lanes {lanes}; priority {change.lane} is not one of them", "lane"
    )


def _member_specs(session: Session, slice_id: int) -> list[SubscriberSpec]:
    rows = session.scalars(
        select(Subscriber)
        .join(subscriber_slice, subscriber_slice.c.subscriber_id == Subscriber.id)
        .where(subscriber_slice.c.slice_id == slice_id)
        .order_by(Subscriber.id)
    )
    return [
        SubscriberSpec(ref=u.id, imsi=u.imsi, ue_ip=int(IPv4Address(str(u.ue_ip))), teids=tuple(u.teids)) for u in rows
    ]


def _describe(i: Intent) -> str:
    what = {
        "prioritise": f"prioritise into lane {i.lane}",
        "steer": f"steer to RR path {i.rr_path}",
        "rate_limit": f"rate-limit to {i.rate_mbps} Mbit/s",
    }.get(i.action, i.action)
    return f"intent {i.id} ({what}, by {i.owner})"


def _refusal(exc: CompileError) -> DomainError:
    if isinstance(exc, AmbiguousMatchError):
        return ConflictError(exc.message, field=exc.field or "intent", title="Conflicting intent")
    return _invalid(exc.message, exc.field or "intent")


def _foreign(exc: CompileError, specs: Sequence[SliceSpec] | None, tenant_scope: int | None) -> bool:
    """Whether a refusal of a backend's whole configuration names another tenant's slice or
    service, which a caller scoped to one tenant must not learn (#27); unknown specs: assume so."""
    if tenant_scope is None:
        return False
    if specs is None:
        return True
    for spec in specs:
        if spec.tenant_ref == tenant_scope:
            continue
        names = [spec.name, *(svc.name for svc in spec.services)]
        if exc.slice_ref == spec.ref or any(f"'{n}'" in exc.message or f" {n} " in f" {exc.message} " for n in names):
            return True
    return False


def _backend_refusal(
    exc: CompileError,
    b: Backend,
    specs: Sequence[SliceSpec] | None,
    tenant_scope: int | None,
) -> DomainError:
    """A compile refusal on a backend every tenant's slices share: in full for an operator; for a
    tenant only that the intent collides with another tenant's configuration there."""
    if not _foreign(exc, specs, tenant_scope):
        return _refusal(exc)
    detail = (
        f"the intent collides with another tenant's configuration on backend {b.id} of the slice; "
        "narrow the UEs / ports / DSCP, or ask an operator (who sees the details)"
    )
    return ConflictError(detail, field=exc.field or "intent", title="Conflicting intent")


def _check_policer(
    session: Session,
    b: Backend,
    s: Slice,
    it: Intent,
    tenants: Sequence[TenantSpec],
    specs: Sequence[SliceSpec],
    tenant_scope: int | None,
) -> None:
    """A rate_limit / drop needs the backend's per-slice policer (422 on intents.<id>.action, as a
    slice's SLA field is refused: services/enforcement.py) and a slice id / policer slot for
    its sub-slice (409 naming the table): the driver's lowering, pure, says whether it fits."""
    try:
        with POOL.use(session, b) as drv:
            caps = drv.capabilities()
            enforcement.refuse_unenforceable(enforcement.intent_gaps(b, caps, s, [it]))
            # compiled for this driver's geometry and match fields, as the deploy will
            drv.lower(
                compile_rules(
                    tenants,
                    specs,
                    TargetSpec(
                        lanes=caps.lanes,
                        paths=caps.paths,
                        match_fields=frozenset(caps.match_fields) & FIELD_WIDTHS.keys(),
                    ),
                ).ir
            )
    except CapacityError as exc:
        raise ConflictError(
            f"with {_describe(it)} backend {b.name!r} has no room for the intent's sub-slice: {exc.message}",
            title="Does not fit",
            issues=[FieldIssue("action", f"backend {b.name}: {exc.message}")],
        ) from exc
    except CompileError as exc:
        raise _backend_refusal(exc, b, specs, tenant_scope) from exc
    except DriverError:
        return  # the driver cannot be built or refuses for another reason: the deploy reports that backend


def _check(session: Session, s: Slice, it: Intent, tenant_scope: int | None) -> None:
    """Conflicts with the slice's other intents, then a compile for every backend of the slice
    (whose refusals a caller scoped to ``tenant_scope`` gets without other tenants' names)."""
    members = _member_specs(session, s.id)
    spec = intent_spec(it, members)
    if spec is None:
        raise _invalid(f"the UEs named are not members of slice {s.name!r}", "ue")
    slice_spec = SliceSpec(
        ref=s.id,
        name=s.name,
        tenant_ref=s.tenant_id,
        type_lanes=tuple(s.slice_type.lanes),
        qos=Qos(rate_bps=round(s.rate_limit_mbps * MBIT) if s.rate_limit_mbps else None),
    )
    try:
        check_intent(slice_spec, spec)
    except CompileError as exc:
        raise _refusal(exc) from exc
    others = {o.id: o for o in session.scalars(select(Intent).where(Intent.slice_id == s.id, Intent.id != it.id))}
    other_specs: list[IntentSpec] = [x for x in (intent_spec(o, members) for o in others.values()) if x is not None]
    clash = intent_conflicts(other_specs, spec)
    if clash:
        names = ", ".join(_describe(others[c.ref]) for c in clash)
        raise ConflictError(
            f"{_describe(it)} and {names} ask different actions of overlapping flows; delete one or "
            "narrow the UEs / ports / DSCP",
            field="intent",
            title="Conflicting intent",
        )
    for b in s.backends:
        # the driver's own lowering is the binding capacity check, at deploy; this one refuses
        # early what cannot fit the classifier capacity the backend reported
        max_rules = min(b.capacity.values()) if b.capacity else None
        try:
            tenants, specs, _ = domain_specs(session, b)
        except CompileError as exc:
            raise _backend_refusal(exc, b, None, tenant_scope) from exc
        try:
            compiled = compile_rules(
                tenants,
                specs,
                TargetSpec(lanes=b.lanes, paths=b.paths, max_rules=max_rules, match_fields=frozenset(FIELD_WIDTHS)),
            )
        except CompileError as exc:
            raise _backend_refusal(exc, b, specs, tenant_scope) from exc
        if not compiled.fits:
            raise ConflictError(
                f"with {_describe(it)} backend {b.name!r} would need {compiled.rules_after} classifier "
                f"entries; it has {max_rules}",
                field="intent",
                title="Does not fit",
            )
        if it.action in enforcement.POLICED_INTENT_ACTIONS:
            _check_policer(session, b, s, it, tenants, specs, tenant_scope)


def create(
    session: Session, change: IntentChange, body: dict[str, Any], who: Requester, idempotency_key: str | None
) -> tuple[Intent, bool]:
    """Store the intent of ``change`` (an insert) after every check; raises a ``DomainError``, changing nothing.

    Returns the intent and whether this call created it (False: a concurrent retry with the
    same Idempotency-Key did first)."""
    if change.dst_ip is not None:
        raise _invalid(
            "an intent selects flows by UE, ports, DSCP and TEID; the destination address is not "
            "supported -- leave dstIP / dst_ip out",
            "dst_ip",
        )
    tenant_id, given = _tenant_and_slice(session, change, who)
    ues = _named(session, change, tenant_id if given is None else given.tenant_id)
    s = _slice_of(change, given, ues)
    it = Intent(
        tenant_id=s.tenant_id,
        slice_id=s.id,
        owner_id=who.user_id,
        owner=who.name,
        source_format=change.source,
        source=body,
        imsis=list(change.imsis),
        ue_prefixes=[str(change.ue)] if change.ue is not None else [],
        teids=[change.teid] if change.teid is not None else [],
        dst_ports=[[lo, hi] for lo, hi in change.dst_ports],
        dscp=list(change.dscp),
        protocol=change.protocol or "any",
        action=change.action,
        lane=_lane(s, change),
        rr_path=change.rr_path,
        rate_mbps=change.rate_mbps,
        idempotency_key=idempotency_key,
        request_hash=request_hash(body) if idempotency_key is not None else None,
    )
    try:
        session.add(it)
        session.flush()
        _check(session, s, it, who.tenant_scope)
        session.commit()
    except IntegrityError:
        # a concurrent retry with the same key committed first: it is the first result
        session.rollback()
        first = replay(session, who, idempotency_key, body)
        if first is None:
            raise
        return first, False
    except BaseException:
        session.rollback()
        raise
    return it, True


def remember_response(session: Session, it: Intent, response: dict[str, Any]) -> None:
    """Keep the first response, which a retry with the same Idempotency-Key gets back."""
    if it.idempotency_key is not None and it.first_response is None:
        # a plain UPDATE: remembering the answer is no change of the intent (no version, no audit row)
        session.execute(update(Intent).where(Intent.id == it.id).values(first_response=response))
        session.commit()


def deploy_slice(session: Session, slice_id: int, actor: str) -> tuple[list[Deployment], list[tuple[int, str]]]:
    """Redeploy every backend of the slice; a backend that cannot take it now is reported, not fatal."""
    s = session.get_one(Slice, slice_id)
    done: list[Deployment] = []
    refused: list[tuple[int, str]] = []
    for b in sorted(s.backends, key=lambda b: b.id):
        try:
            done.append(svc.deploy(session, b, actor))
        except DomainError as exc:
            session.rollback()
            refused.append((b.id, exc.detail))
    return done, refused


def _same_match(i: Intent, change: IntentChange) -> bool:
    return (
        sorted(i.imsis) == sorted(change.imsis)
        and i.ue_prefixes == ([str(change.ue)] if change.ue is not None else [])
        and i.teids == ([change.teid] if change.teid is not None else [])
        and sorted(map(tuple, i.dst_ports)) == sorted(change.dst_ports)
        and sorted(i.dscp) == sorted(change.dscp)
    )


def delete_matching(session: Session, change: IntentChange, who: Requester) -> list[Intent]:
    """A DELETE message (Listing 1 ``actionType: DELETE``): remove the intents with exactly its match."""
    tenant_id, given = _tenant_and_slice(session, change, who)
    ues = _named(session, change, tenant_id if given is None else given.tenant_id)
    s = _slice_of(change, given, ues)
    gone = [
        i
        for i in session.scalars(select(Intent).where(Intent.slice_id == s.id).order_by(Intent.id))
        if _same_match(i, change)
    ]
    if not gone:
        raise NotFoundError(f"slice {s.name!r} has no intent with exactly this match")
    for i in gone:
        session.delete(i)
    session.commit()
    return gone


def delete(session: Session, it: Intent) -> None:
    session.delete(it)
    session.commit()


def _intent_counters(
    session: Session, b: Backend, rules: list[dict[str, Any]], policer: dict[str, Any] | None
) -> dict[str, Any] | None:
    """The data plane's monotonic counters for the intent: its sub-slice's (every plane counts
    per slice id, and the id is the intent's alone), else the sum of its rules' hits."""
    if not rules:
        return None
    try:
        with POOL.try_use(session, b, read_back=True) as drv:
            if drv is None:
                return None  # a push holds the driver: no reading now
            c = drv.counters()
    except DriverError:
        return None
    if policer is not None:
        got = c.slices.get(policer["slice_id"])
        return {"packets": got.packets if got else 0, "drops": dict(got.drops) if got else {}}
    hits = [c.rules[r["index"]] for r in rules if r["index"] in c.rules]
    drops: dict[str, int] = {}
    for h in hits:
        for reason, n in h.drops.items():
            drops[reason] = drops.get(reason, 0) + n
    return {"packets": sum(h.packets for h in hits), "drops": drops}


def entries(session: Session, it: Intent, *, counters: bool = False) -> list[BackendEntries]:
    """Per backend of the intent's slice: the rules of the rule set in force the intent produced,
    its sub-slice there (rate_limit / drop), and with ``counters`` what the data plane counted."""
    s = session.get_one(Slice, it.slice_id)
    out = []
    for b in sorted(s.backends, key=lambda b: b.id):
        rs = svc.current_rule_set(session, b.id)
        rules = (
            []
            if rs is None
            else [
                {"index": n, "match": {k: v for k, v in r["match"].items() if v is not None}, "action": r["action"]}
                for n, r in enumerate(rs.ir.get("rules", []))
                if intent_ref_of(r.get("note", "")) == it.id
            ]
        )
        sub = (
            None
            if rs is None
            else next(
                (e for e in rs.ir.get("slices", []) if e.get("intent_ref") == it.id and e.get("ref") == it.slice_id),
                None,
            )
        )
        policer = (
            None
            if sub is None
            else {"slice_id": sub["slice_id"], "rate_bps": sub["qos"]["rate_bps"], "burst_ms": sub["qos"]["burst_ms"]}
        )
        out.append(
            BackendEntries(
                b,
                None if rs is None else rs.number,
                rules,
                policer,
                _intent_counters(session, b, rules, policer) if counters else None,
            )
        )
    return out
