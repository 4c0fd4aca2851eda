"""Compile, preview, deploy, roll back and reconcile rules on one backend.

The pure parts (compiler, lowering, push, diff, reconcile) live in ``sliceportal.rules``
and ``sliceportal.drivers.push``; this module adds what needs the database: building the
compiler's input from the domain, versioned RuleSets, Deployment records, slice states
and the audit trail. A deployment row is committed as ``running`` before the push starts
and completed afterwards, so a crash mid-push leaves a visible record.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime

from sqlalchemy import func, select
from sqlalchemy.orm import Session

from sliceportal.api.errors import ApiError, FieldError
from sliceportal.drivers.contract import (
    CapacityError,
    Driver,
    DriverError,
    NativePlan,
    ProgressEvent,
)
from sliceportal.drivers.push import PushOutcome, ReconcileReport, diff_tables, plan_for, push, reconcile_once
from sliceportal.models import (
    Backend,
    Deployment,
    DeploymentKind,
    DeploymentStatus,
    RuleSet,
    Slice,
    SliceState,
    Subscriber,
    Tenant,
)
from sliceportal.models.audit import record
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.rules.compiler import CompileResult, compile_rules
from sliceportal.rules.errors import CompileError
from sliceportal.rules.ir import FIELD_WIDTHS, Qos
from sliceportal.rules.spec import ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec
from sliceportal.services.backends import POOL

MBIT = 1_000_000


@dataclass(frozen=True)
class Preview:
    compiled: CompileResult
    plan: NativePlan


def _slice_spec(s: Slice, subscribers: Sequence[Subscriber]) -> SliceSpec:
    qos = Qos(
        rate_bps=int(s.rate_limit_mbps * MBIT) if s.rate_limit_mbps else None,
        guaranteed_bps=int(s.guaranteed_mbps * MBIT) if s.guaranteed_mbps else None,
        burst_ms=s.max_delay_ms, ecn_ms=s.ecn_delay_ms,
    )
    services = tuple(
        ServiceSpec(name=c.name, lane=c.lane, dst_ports=tuple((lo, hi) for lo, hi in c.dst_ports),
                    dscp=tuple(c.dscp), protocol=None if c.protocol == "any" else c.protocol)  # type: ignore[arg-type]
        for c in s.services
    )
    subs = tuple(SubscriberSpec(ref=u.id, imsi=u.imsi, ue_ip=int(ipaddress.IPv4Address(str(u.ue_ip))),
                                teids=tuple(u.teids)) for u in subscribers)
    return SliceSpec(ref=s.id, name=s.name, tenant_ref=s.tenant_id, type_lanes=tuple(s.slice_type.lanes),
                     qos=qos, services=services, subscribers=subs,
                     path_mode=str(s.path_mode),  # type: ignore[arg-type]
                     # key on the tenant's VNI / VLAN where the target can: table slicing needs it
                     match_tunnel=True)


def domain_specs(session: Session, backend: Backend) -> tuple[list[TenantSpec], list[SliceSpec], list[Slice]]:
    """The compiler's input: every slice assigned to ``backend`` with its services and UEs."""
    slices = list(session.scalars(select(Slice).where(Slice.backends.any(Backend.id == backend.id))
                                  .order_by(Slice.id)))
    ids = [s.id for s in slices]
    members: dict[int, list[Subscriber]] = {i: [] for i in ids}
    if ids:
        rows = session.execute(select(subscriber_slice.c.slice_id, Subscriber)
                               .join(Subscriber, Subscriber.id == subscriber_slice.c.subscriber_id)
                               .where(subscriber_slice.c.slice_id.in_(ids)).order_by(Subscriber.id))
        for slice_id, sub in rows:
            members[slice_id].append(sub)
    tenant_ids = {s.tenant_id for s in slices}
    tenants = [TenantSpec(ref=t.id, name=t.name, vni=t.vni, vlan=t.vlan)
               for t in session.scalars(select(Tenant).where(Tenant.id.in_(tenant_ids)))]
    return tenants, [_slice_spec(s, members[s.id]) for s in slices], slices


def _target(driver: Driver) -> TargetSpec:
    caps = driver.capabilities()
    return TargetSpec(lanes=caps.lanes, paths=caps.paths,
                      match_fields=frozenset(caps.match_fields) & FIELD_WIDTHS.keys(),
                      max_rules=min(caps.capacity.values()) if caps.capacity else None)


def _refusal(exc: Exception) -> ApiError:
    if isinstance(exc, CompileError):
        return ApiError(422, "Cannot compile", exc.message, errors=[FieldError(
            field=exc.field or "slices", message=exc.message)])
    if isinstance(exc, CapacityError):
        return ApiError(409, "Does not fit", f"{exc.message}: needed {exc.needed}, available {exc.available}",
                        errors=[FieldError(field=exc.table, message=exc.message)])
    assert isinstance(exc, DriverError)
    return ApiError(409 if not exc.hint else 422, "Refused by the data plane",
                    f"{exc.message}{'; ' + exc.hint if exc.hint else ''}")


def _preview(session: Session, backend: Backend, drv: Driver) -> Preview:
    try:
        tenants, specs, _ = domain_specs(session, backend)
        compiled = compile_rules(tenants, specs, _target(drv))
        return Preview(compiled, plan_for(drv, compiled.ir))
    except (CompileError, DriverError) as exc:
        raise _refusal(exc) from exc


def preview(session: Session, backend: Backend) -> Preview:
    """Compile and lower for ``backend`` without touching its data plane."""
    with POOL.use(session, backend) as drv:
        return _preview(session, backend, drv)


def current_rule_set(session: Session, backend_id: int) -> RuleSet | None:
    """The rule set of the last successful deployment (what the data plane should hold)."""
    return session.scalar(select(RuleSet).join(Deployment, Deployment.rule_set_id == RuleSet.id)
                          .where(Deployment.backend_id == backend_id,
                                 Deployment.status == DeploymentStatus.SUCCEEDED)
                          .order_by(Deployment.id.desc()).limit(1))


def _store_rule_set(session: Session, backend: Backend, p: Preview, actor: str) -> RuleSet:
    number = (session.scalar(select(func.max(RuleSet.number)).where(RuleSet.backend_id == backend.id)) or 0) + 1
    explanation = {"flows": p.compiled.flows, "rules_before": p.compiled.rules_before,
                   "rules_after": p.compiled.rules_after, "slices": [asdict(s) for s in p.compiled.slices]}
    rs = RuleSet(backend_id=backend.id, number=number, digest=p.plan.version, ir=p.compiled.ir.to_json(),
                 plan=p.plan.model_dump(mode="json"), explanation=explanation, created_by=actor)
    session.add(rs)
    session.flush()
    return rs


def _run(session: Session, backend: Backend, rule_set: RuleSet, kind: DeploymentKind, actor: str,
         drv: Driver, progress: Callable[[ProgressEvent], None] | None) -> Deployment:
    previous = current_rule_set(session, backend.id)
    prev_plan = NativePlan.model_validate(previous.plan) if previous else None
    new_plan = NativePlan.model_validate(rule_set.plan)
    diff = diff_tables(prev_plan.tables if prev_plan else {}, new_plan.tables)
    dep = Deployment(backend_id=backend.id, rule_set_id=rule_set.id,
                     previous_rule_set_id=previous.id if previous else None, kind=kind, actor=actor,
                     diff=diff.model_dump(mode="json"))
    session.add(dep)
    session.commit()  # visible as running while the push is under way
    outcome: PushOutcome = push(drv, new_plan, progress, previous=prev_plan)
    dep.status = DeploymentStatus.SUCCEEDED if outcome.ok else DeploymentStatus.FAILED
    dep.error = "" if outcome.ok else f"{outcome.error}{'; ' + outcome.hint if outcome.hint else ''}"
    dep.rolled_back = outcome.rolled_back
    dep.finished_at = datetime.now(UTC)
    dep.duration_s = outcome.duration_s
    state = SliceState.DEPLOYED if outcome.ok else SliceState.FAILED
    for s in session.scalars(select(Slice).where(Slice.backends.any(Backend.id == backend.id))):
        if outcome.ok or s.state != SliceState.DEPLOYED or not outcome.rolled_back:
            s.state = state
    record(session, kind.value, "backend", backend.id,
           after={"deployment": dep.id, "rule_set": rule_set.number, "status": dep.status.value,
                  "diff": dict(outcome.diff), "error": dep.error})
    session.commit()
    return dep


def deploy(session: Session, backend: Backend, actor: str,
           progress: Callable[[ProgressEvent], None] | None = None) -> Deployment:
    with POOL.use(session, backend) as drv:
        p = _preview(session, backend, drv)
        rule_set = _store_rule_set(session, backend, p, actor)
        return _run(session, backend, rule_set, DeploymentKind.DEPLOY, actor, drv, progress)


def rollback(session: Session, backend: Backend, rule_set_number: int, actor: str,
             progress: Callable[[ProgressEvent], None] | None = None) -> Deployment:
    rule_set = session.scalar(select(RuleSet).where(RuleSet.backend_id == backend.id,
                                                    RuleSet.number == rule_set_number))
    if rule_set is None:
        raise ApiError(404, "Not found", f"backend {backend.id} has no rule set {rule_set_number}",
                       field="rule_set")
    with POOL.use(session, backend) as drv:
        return _run(session, backend, rule_set, DeploymentKind.ROLLBACK, actor, drv, progress)


def reconcile(session: Session, backend: Backend) -> ReconcileReport | None:
    """Read the backend back; report and repair drift from its last good rule set."""
    expected = current_rule_set(session, backend.id)
    if expected is None:
        return None
    plan = NativePlan.model_validate(expected.plan)
    try:
        for attempt in range(2):
            with POOL.use(session, backend) as drv:
                report = reconcile_once(drv, plan)
                health = drv.health()
            if report.reachable or attempt:
                break
            # the data plane may have restarted under a session that is now dead: reconnect once
            POOL.discard(session, backend)
    except DriverError as exc:
        backend.health, backend.health_detail = "unreachable", exc.message
        session.commit()
        return None
    backend.health = "ok" if health.ok and report.reachable else "down"
    backend.health_detail = health.detail if report.reachable else (report.error or "")
    if not report.in_sync and report.reachable:
        now = datetime.now(UTC)
        dep = Deployment(backend_id=backend.id, rule_set_id=expected.id, previous_rule_set_id=expected.id,
                         kind=DeploymentKind.RECONCILE, actor="reconciler",
                         status=DeploymentStatus.SUCCEEDED if report.repaired else DeploymentStatus.FAILED,
                         diff={"drift": report.drift, "tables": report.drift_tables,
                               "restarted_empty": report.restarted_empty},
                         error=report.error or "", finished_at=now,
                         duration_s=report.outcome.duration_s if report.outcome else 0.0)
        session.add(dep)
        record(session, "reconcile", "backend", backend.id, after=report.model_dump(mode="json", exclude={"outcome"}))
    session.commit()
    return report
