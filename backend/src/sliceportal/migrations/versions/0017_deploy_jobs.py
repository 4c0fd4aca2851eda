"""deployments are jobs: who runs one, its heartbeat, its progress, who resumed it (issue #26)

A deploy or rollback is a job whose record is its ``deployment`` row: the process pushing it
renews ``heartbeat_at`` every second and keeps its latest progress event in ``progress``;
when that process dies the leading controller finds the stale heartbeat and finishes the push
(``resumed_by``). Rows written before this revision have no heartbeat: a dead process's row
among them still ends as failed (interrupted), as before.

Revision ID: 0017_deploy_jobs
Revises: 0016
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0017_deploy_jobs"
down_revision = "0016"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("deployment", sa.Column("runner", sa.String(200), nullable=False, server_default=""))
    op.add_column("deployment", sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True))
    op.add_column("deployment", sa.Column("progress", JSONB, nullable=True))
    op.add_column("deployment", sa.Column("resumed_by", sa.String(200), nullable=False, server_default=""))
    # the leader's job duty looks for running rows only: a partial index keeps that cheap
    op.create_index(
        "ix_deployment_running", "deployment", ["heartbeat_at"], postgresql_where=sa.text("status = 'running'")
    )


def downgrade() -> None:
    op.drop_index("ix_deployment_running", table_name="deployment")
    for column in ("resumed_by", "progress", "heartbeat_at", "runner"):
        op.drop_column("deployment", column)
