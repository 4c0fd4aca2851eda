"""Queries on the models that several layers ask (services, kpi, testbed), kept at the bottom
so that asking them imports no domain operation."""

from __future__ import annotations

from sqlalchemy import bindparam, select, text
from sqlalchemy.orm import Session, defer

from sliceportal.models.deployments import Deployment, DeploymentKind, DeploymentStatus, RuleSet
from sliceportal.models.kpi import KpiSample

PUSH_KINDS = (DeploymentKind.DEPLOY, DeploymentKind.ROLLBACK)  # what puts a rule set in force


def current_rule_set(session: Session, backend_id: int) -> RuleSet | None:
    """The rule set of the last finished successful deploy or rollback: what the data plane should hold.

    A deployment still running does not count (its push may be half-way), and a reconcile
    never counts: it only re-applies this very rule set, so no reconcile can make a rule set
    current that no deployment committed.

    Its IR and explanation are loaded when asked for (most callers want its number or its
    plan; a reconcile pass reads one per backend, and decoding the IR was a third of it).
    """
    return session.scalar(_CURRENT_RULE_SET, {"backend_id": backend_id})


# built once: every deploy and every reconcile of every backend runs it, and building it was
# half of its CPU (the statement cache saves compiling it, not constructing it)
_CURRENT_RULE_SET = (
    select(RuleSet)
    .options(defer(RuleSet.ir), defer(RuleSet.explanation))
    .join(Deployment, Deployment.rule_set_id == RuleSet.id)
    .where(
        Deployment.backend_id == bindparam("backend_id"),
        Deployment.status == DeploymentStatus.SUCCEEDED,
        Deployment.kind.in_(PUSH_KINDS),
        Deployment.finished_at.is_not(None),
    )
    .order_by(Deployment.id.desc())
    .limit(1)
)


# The newest sample of each (backend, lane, source) of a slice by walking the primary key
# (slice_id, backend_id, lane, source, ts): a skip scan finds the triples, one backwards index
# probe per triple finds its newest sample. A GROUP BY max(ts) reads every sample of the slice
# instead (136 ms at 250 k samples per slice against 0.4 ms, EXPLAIN ANALYZE in bench/api_latency.py's database).
NEWEST_PER_LANE = """
WITH RECURSIVE keys(backend_id, lane, source) AS (
  (SELECT backend_id, lane, source FROM kpi_sample WHERE slice_id = :s {backend}
   ORDER BY backend_id, lane, source LIMIT 1)
  UNION ALL
  SELECT n.backend_id, n.lane, n.source FROM keys p CROSS JOIN LATERAL (
    SELECT backend_id, lane, source FROM kpi_sample WHERE slice_id = :s {backend}
      AND (backend_id, lane, source) > (p.backend_id, p.lane, p.source) ORDER BY backend_id, lane, source LIMIT 1) n)
SELECT k.* FROM keys p CROSS JOIN LATERAL (
  SELECT * FROM kpi_sample WHERE slice_id = :s AND backend_id = p.backend_id AND lane = p.lane
    AND source = p.source ORDER BY ts DESC LIMIT 1) k
ORDER BY k.backend_id, k.lane, k.source
"""


def newest_samples(session: Session, slice_id: int, backend_id: int | None = None) -> list[KpiSample]:
    """The newest KPI sample of each (backend, lane, source) of a slice, optionally of one backend."""
    backend = "AND backend_id = :b" if backend_id is not None else ""
    binds: dict[str, int] = {"s": slice_id} | ({"b": backend_id} if backend_id is not None else {})
    return list(
        session.scalars(
            select(KpiSample).from_statement(text(NEWEST_PER_LANE.format(backend=backend)).bindparams(**binds))
        )
    )
