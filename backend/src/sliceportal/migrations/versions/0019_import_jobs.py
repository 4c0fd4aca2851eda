"""subscriber imports are jobs: the upload, who sent it, its heartbeat, its outcome (issue #26)

A CSV import is a job whose record is its ``import_job`` row, committed before the import
starts: the process importing renews ``heartbeat_at`` every second; when it dies the leading
controller imports the stored upload again as the original actor (``resumed_by``). The row
turns ``succeeded`` in the transaction that inserts the subscribers.

Revision ID: 0019_import_jobs
Revises: 0017_deploy_jobs
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0019_import_jobs"
down_revision = "0017_deploy_jobs"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "import_job",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("status", sa.String(20), nullable=False),
        sa.Column("csv", sa.LargeBinary, nullable=False),
        sa.Column("options", JSONB, nullable=False),
        sa.Column("actor_id", sa.BigInteger, nullable=True),
        sa.Column("actor", sa.String(120), nullable=False),
        sa.Column("via", sa.String(60), nullable=False),
        sa.Column("tenant_id", sa.BigInteger, nullable=True),
        sa.Column("runner", sa.String(200), nullable=False),
        sa.Column("heartbeat_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("resumed_by", sa.String(200), nullable=False),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("report", JSONB, nullable=True),
        sa.Column("error", sa.Text, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
    )
    op.create_index("ix_import_job_tenant_id", "import_job", ["tenant_id"])
    # the leader's job duty looks for running rows only: a partial index keeps that cheap
    op.create_index(
        "ix_import_job_running", "import_job", ["heartbeat_at"], postgresql_where=sa.text("status = 'running'")
    )


def downgrade() -> None:
    op.drop_table("import_job")
