"""backend sync state: what the last reconcile found on the data plane

Revision ID: 0004
Revises: 0003
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0004"
down_revision = "0003"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("backend", sa.Column("sync_state", sa.String(20), nullable=False, server_default="unknown"))
    op.add_column("backend", sa.Column("sync_detail", JSONB, nullable=False, server_default="{}"))
    op.add_column("backend", sa.Column("synced_at", sa.DateTime(timezone=True), nullable=True))


def downgrade() -> None:
    op.drop_column("backend", "synced_at")
    op.drop_column("backend", "sync_detail")
    op.drop_column("backend", "sync_state")
