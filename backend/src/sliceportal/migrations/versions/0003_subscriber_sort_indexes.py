"""indexes for the subscriber table's sort orders

Revision ID: 0003
Revises: 0002
"""

from alembic import op

revision = "0003"
down_revision = "0002"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_index("ix_subscriber_imsi_id", "subscriber", ["imsi", "id"])
    op.create_index("ix_subscriber_ue_ip_id", "subscriber", ["ue_ip", "id"])


def downgrade() -> None:
    op.drop_index("ix_subscriber_ue_ip_id", "subscriber")
    op.drop_index("ix_subscriber_imsi_id", "subscriber")
