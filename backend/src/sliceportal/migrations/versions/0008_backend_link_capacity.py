"""backend egress link capacity (bit/s) and per-port capacities, for admission control; the
SLA capabilities an operator accepts a backend does not enforce (none by default); the reason an
operator admitted a slice over admission control's refusal

Existing backends get 10 Gbit/s: what each bundled driver declares by default
(``Capabilities.link_bps``); an operator corrects it per backend.

Revision ID: 0008
Revises: 0007
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0008"
down_revision = "0007"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("backend", sa.Column("link_bps", sa.BigInteger, nullable=False, server_default="10000000000"))
    op.add_column("backend", sa.Column("port_bps", JSONB, nullable=False, server_default="{}"))
    op.create_check_constraint(op.f("ck_backend_link_bps_positive"), "backend", "link_bps > 0")
    op.add_column(
        "backend", sa.Column("accept_unenforced", sa.ARRAY(sa.String(20)), nullable=False, server_default="{}")
    )
    op.add_column("slice", sa.Column("admission_override", sa.Text, nullable=True))


def downgrade() -> None:
    op.drop_column("slice", "admission_override")
    op.drop_column("backend", "accept_unenforced")
    op.drop_constraint(op.f("ck_backend_link_bps_positive"), "backend", type_="check")
    op.drop_column("backend", "port_bps")
    op.drop_column("backend", "link_bps")
