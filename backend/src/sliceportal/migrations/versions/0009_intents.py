"""intents as first-class objects: per-flow match, action, source message, idempotency key

Revision ID: 0009
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0009"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "intent",
        sa.Column("id", sa.BigInteger, primary_key=True, autoincrement=True),
        sa.Column("tenant_id", sa.Integer, nullable=False),
        sa.Column("slice_id", sa.Integer, nullable=False),
        sa.Column("owner_id", sa.Integer, nullable=True),
        sa.Column("owner", sa.String(120), nullable=False),
        sa.Column("source_format", sa.String(10), nullable=False),
        sa.Column("source", JSONB, nullable=False),
        sa.Column("imsis", ARRAY(sa.String(15)), nullable=False),
        sa.Column("ue_prefixes", ARRAY(sa.String(18)), nullable=False),
        sa.Column("teids", ARRAY(sa.BigInteger), nullable=False),
        sa.Column("dst_ports", JSONB, nullable=False),
        sa.Column("dscp", ARRAY(sa.Integer), nullable=False),
        sa.Column("protocol", sa.String(8), nullable=False),
        sa.Column("action", sa.String(12), nullable=False),
        sa.Column("lane", sa.Integer, nullable=True),
        sa.Column("rr_path", sa.Integer, nullable=True),
        sa.Column("rate_mbps", sa.Float, nullable=True),
        sa.Column("idempotency_key", sa.String(255), nullable=True),
        sa.Column("request_hash", sa.String(64), nullable=True),
        sa.Column("first_response", JSONB, nullable=True),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("version", sa.Integer, nullable=False),
        sa.PrimaryKeyConstraint("id", name="pk_intent"),
        sa.ForeignKeyConstraint(["tenant_id"], ["tenant.id"], name="fk_intent_tenant_id_tenant", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(["slice_id"], ["slice.id"], name="fk_intent_slice_id_slice", ondelete="CASCADE"),
        sa.ForeignKeyConstraint(
            ["owner_id"], ["user_account.id"], name="fk_intent_owner_id_user_account", ondelete="SET NULL"
        ),
        sa.UniqueConstraint("owner_id", "idempotency_key", name="uq_intent_owner_id_idempotency_key"),
        sa.CheckConstraint("action IN ('prioritise', 'steer', 'rate_limit', 'drop')", name="ck_intent_action_known"),
    )
    op.create_index("ix_intent_tenant_id", "intent", ["tenant_id"])
    op.create_index("ix_intent_slice_id", "intent", ["slice_id"])


def downgrade() -> None:
    op.drop_table("intent")
