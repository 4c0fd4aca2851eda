"""a subscriber's own guaranteed rate (bit/s): admission control sums them per slice

Optional (NULL: the subscriber shares its slice's guarantee); a slice whose subscribers carry
guarantees promises their sum on every link it uses (services/admission.py).

Revision ID: 0012
Revises: 0011
"""

import sqlalchemy as sa
from alembic import op

revision = "0012"
down_revision = "0011"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("subscriber", sa.Column("guaranteed_bps", sa.BigInteger, nullable=True))
    op.create_check_constraint(
        op.f("ck_subscriber_guaranteed_bps_positive"), "subscriber", "guaranteed_bps IS NULL OR guaranteed_bps > 0"
    )


def downgrade() -> None:
    op.drop_constraint(op.f("ck_subscriber_guaranteed_bps_positive"), "subscriber", type_="check")
    op.drop_column("subscriber", "guaranteed_bps")
