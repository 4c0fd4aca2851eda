"""controller process: leader heartbeat, live testbed state, testbed commands

Revision ID: 0011
Revises: 0010
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0011"
down_revision = "0010"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "controller_heartbeat",
        sa.Column("role", sa.String(40), nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("since", sa.DateTime(timezone=True), nullable=False),
        sa.Column("beat_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("period_s", sa.Float, nullable=False),
        sa.Column("loops", JSONB, nullable=False),
        sa.PrimaryKeyConstraint("role", name="pk_controller_heartbeat"),
    )
    op.create_table(
        "testbed_report",
        sa.Column("id", sa.SmallInteger, nullable=False),
        sa.Column("host", sa.String(255), nullable=False),
        sa.Column("pid", sa.Integer, nullable=False),
        sa.Column("reported_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("state", JSONB, nullable=False),
        sa.Column("base_pps", JSONB, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_testbed_report"),
    )
    op.create_table(
        "testbed_command",
        sa.Column("id", sa.BigInteger, autoincrement=True, nullable=False),
        sa.Column("backend_id", sa.BigInteger, nullable=False),
        sa.Column("factor", sa.Float, nullable=False),
        sa.Column("until", sa.DateTime(timezone=True), nullable=False),
        sa.Column("actor", sa.String(120), nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("applied_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("error", sa.Text, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_testbed_command"),
    )
    # the controller's poll: the commands it has not applied yet
    op.create_index(
        "ix_testbed_command_pending", "testbed_command", ["id"], postgresql_where=sa.text("applied_at IS NULL")
    )


def downgrade() -> None:
    op.drop_table("testbed_command")
    op.drop_table("testbed_report")
    op.drop_table("controller_heartbeat")
