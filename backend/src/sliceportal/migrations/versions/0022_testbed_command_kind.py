"""testbed commands say what they are (#31); intent's ids are BIGINT like the ids they name

Revision ID: 0022_testbed_command_kind
Revises: 0021_sla_check_state

An end used to be a command of factor 1.0 (no overload), a sentinel the controller compared
against; ``kind`` says it. Rows recorded before are read as they were meant: factor <= 1 ended.

``intent``'s tenant, slice and owner columns were created INTEGER (0016) while the ids they
reference, and the model, are BIGINT: found by comparing the models with the migrated schema
(tests/models/test_schema.py).
"""

import sqlalchemy as sa
from alembic import op

revision = "0022_testbed_command_kind"
down_revision = "0021_sla_check_state"
branch_labels = None
depends_on = None

INTENT_IDS = ("tenant_id", "slice_id", "owner_id")


def upgrade() -> None:
    op.add_column("testbed_command", sa.Column("kind", sa.String(8), nullable=False, server_default="start"))
    op.execute("UPDATE testbed_command SET kind = 'end' WHERE factor <= 1.0")
    op.create_check_constraint("ck_testbed_command_kind", "testbed_command", "kind IN ('start', 'end')")
    for column in INTENT_IDS:
        op.alter_column("intent", column, type_=sa.BigInteger(), existing_type=sa.Integer())


def downgrade() -> None:
    for column in INTENT_IDS:
        op.alter_column("intent", column, type_=sa.Integer(), existing_type=sa.BigInteger())
    op.execute("UPDATE testbed_command SET factor = 1.0 WHERE kind = 'end'")
    op.drop_constraint("ck_testbed_command_kind", "testbed_command", type_="check")
    op.drop_column("testbed_command", "kind")
