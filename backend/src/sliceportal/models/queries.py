"""Queries on the models that several layers ask (services, kpi, testbed), kept at the bottom
so that asking them imports no domain operation."""

from __future__ import annotations

from sqlalchemy import select
from sqlalchemy.orm import Session

from sliceportal.models.deployments import Deployment, DeploymentKind, DeploymentStatus, RuleSet

PUSH_KINDS = (DeploymentKind.DEPLOY, DeploymentKind.ROLLBACK)  # what puts a rule set in force


def current_rule_set(session: Session, backend_id: int) -> RuleSet | None:
    """The rule set of the last finished successful deploy or rollback: what the data plane should hold.

    A deployment still running does not count (its push may be half-way), and a reconcile
    never counts: it only re-applies this very rule set, so no reconcile can make a rule set
    current that no deployment committed.
    """
    return session.scalar(select(RuleSet).join(Deployment, Deployment.rule_set_id == RuleSet.id)
                          .where(Deployment.backend_id == backend_id,
                                 Deployment.status == DeploymentStatus.SUCCEEDED,
                                 Deployment.kind.in_(PUSH_KINDS),
                                 Deployment.finished_at.is_not(None))
                          .order_by(Deployment.id.desc()).limit(1))
