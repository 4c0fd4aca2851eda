"""The compiler's input for a backend, built from the domain, and compiles shared by backends
that carry the same slices (issue #28 item 2).

What a backend compiles to depends on its slices (with their services, subscribers, intents
and tenants) and on its target (geometry, match fields, rule budget, miss policy), nothing
else: two backends with the same footprint input key (``footprint_state.input_key``, the
generations of every slice on the backend) and the same target compile to the same IR. A
fleet carrying one slice is one compile, not one per backend; what lowering makes of the IR
stays per backend (a driver keeps the priorities its switch holds).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import BigInteger, cast, literal, select, type_coerce
from sqlalchemy.dialects.postgresql import INET
from sqlalchemy.orm import Session
from sqlalchemy.types import NullType

from sliceportal.core.jsontext import canonical
from sliceportal.core.process_metrics import COMPILE_DURATION
from sliceportal.drivers.contract import Driver, NativePlan
from sliceportal.models import Backend, Slice, Subscriber, Tenant
from sliceportal.models.subscribers import subscriber_slice
from sliceportal.rules.compiler import CompileResult, compile_rules
from sliceportal.rules.equivalence import EquivalenceResult
from sliceportal.rules.ir import Qos, RuleIR
from sliceportal.rules.spec import ServiceSpec, SliceSpec, SubscriberSpec, TargetSpec, TenantSpec
from sliceportal.services.equivalence import check_plan
from sliceportal.services.intent_specs import MBIT, with_intents

DomainSpecs = tuple[list[TenantSpec], list[SliceSpec], list[Slice]]


def _slice_spec(s: Slice, subscribers: Sequence[SubscriberSpec]) -> SliceSpec:
    qos = Qos(
        rate_bps=int(s.rate_limit_mbps * MBIT) if s.rate_limit_mbps else None,
        guaranteed_bps=int(s.guaranteed_mbps * MBIT) if s.guaranteed_mbps else None,
        burst_ms=s.max_delay_ms,
        ecn_ms=s.ecn_delay_ms,
    )
    services = tuple(
        ServiceSpec(
            name=c.name,
            lane=c.lane,
            dst_ports=tuple((lo, hi) for lo, hi in c.dst_ports),
            dscp=tuple(c.dscp),
            protocol=None if c.protocol == "any" else c.protocol,  # type: ignore[arg-type]
        )
        for c in s.services
    )
    return SliceSpec(
        ref=s.id,
        name=s.name,
        tenant_ref=s.tenant_id,
        type_lanes=tuple(s.slice_type.lanes),
        qos=qos,
        services=services,
        subscribers=tuple(subscribers),
        path_mode=str(s.path_mode),  # type: ignore[arg-type]
        # key on the tenant's VNI / VLAN where the target can: table slicing needs it
        match_tunnel=True,
    )


def domain_specs(session: Session, backend: Backend) -> DomainSpecs:
    """The compiler's input: every slice assigned to ``backend`` with its services and UEs."""
    slices = list(session.scalars(select(Slice).where(Slice.backends.any(Backend.id == backend.id)).order_by(Slice.id)))
    ids = [s.id for s in slices]
    members: dict[int, list[SubscriberSpec]] = {i: [] for i in ids}
    if ids:
        # columns, not ORM objects, and the address as an integer computed by PostgreSQL
        # (inet - inet): loading 10 k subscribers as objects and parsing their addresses took
        # 3.5 s of a 3.8 s deploy, paid again by every backend of a fleet (bench/scale_backends.py)
        ip = Subscriber.ue_ip.op("-", return_type=BigInteger)(cast(literal("0.0.0.0"), INET)).label("ip")
        teids = type_coerce(Subscriber.teids, NullType()).label("teids")  # psycopg's list as is, no per-item pass
        rows = session.execute(
            select(subscriber_slice.c.slice_id, Subscriber.id, Subscriber.imsi, ip, teids)
            .join(Subscriber, Subscriber.id == subscriber_slice.c.subscriber_id)
            .where(subscriber_slice.c.slice_id.in_(ids))
            .order_by(Subscriber.id)
        )
        for slice_id, ref, imsi, ue_ip, teids in rows:
            members[slice_id].append(SubscriberSpec(ref=ref, imsi=imsi, ue_ip=int(ue_ip), teids=tuple(teids)))
    tenant_ids = {s.tenant_id for s in slices}
    tenants = [
        TenantSpec(ref=t.id, name=t.name, vni=t.vni, vlan=t.vlan)
        for t in session.scalars(select(Tenant).where(Tenant.id.in_(tenant_ids)))
    ]
    # per-flow intents ride along with their slices (issue #14 item 1)
    return tenants, with_intents(session, [_slice_spec(s, members[s.id]) for s in slices]), slices


class SharedCompiles:
    """One pass over several backends in one session (a slice deploy's preflight, a footprint
    refresh): each distinct slice set is read once and compiled once per target, and each
    distinct plan of it proven once.

    ``key`` is the backend's footprint input key read *before* its compile, as every caller
    reads it: what is read or compiled under a key is at least as new as the key, and a
    change committed after the key was read gives the next backend another key."""

    def __init__(self) -> None:
        self._specs: dict[str, DomainSpecs] = {}
        self._compiled: dict[tuple[str, TargetSpec], CompileResult] = {}
        self._proofs: dict[tuple[str, str, bytes], EquivalenceResult] = {}

    def specs(self, session: Session, backend: Backend, key: str) -> DomainSpecs:
        if key not in self._specs:
            self._specs[key] = domain_specs(session, backend)
        return self._specs[key]

    def compiled(self, session: Session, backend: Backend, key: str, target: TargetSpec) -> CompileResult:
        """Raises ``CompileError`` (not kept: the next backend with the key raises it again)."""
        if (key, target) not in self._compiled:
            tenants, specs, _ = self.specs(session, backend, key)
            with COMPILE_DURATION.labels(backend.driver).time():
                self._compiled[key, target] = compile_rules(tenants, specs, target)
        return self._compiled[key, target]

    def proven(self, ir: RuleIR, plan: NativePlan, drv: Driver) -> EquivalenceResult:
        """``equivalence.check_plan``, once per distinct plan of an IR: fresh backends of one
        driver are given the same entries, and a proof holds for every copy of them."""
        key = (plan.driver, plan.version, canonical(plan.tables))
        if key not in self._proofs:
            self._proofs[key] = check_plan(ir, plan, drv)
        return self._proofs[key]
