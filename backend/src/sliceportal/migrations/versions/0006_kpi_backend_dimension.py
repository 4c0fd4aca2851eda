"""KPIs keyed by backend: kpi_sample (slice, backend, lane, ts); violations per backend with evidence

Existing rows: before this revision only the live testbed's XDP data plane carried
traffic (issue #12), so when exactly one backend with driver ``xdp`` exists, old samples
and violations are attributed to it. Otherwise where they came from cannot be derived
and they are deleted (a sample whose data plane is unknown is not a fact).

Revision ID: 0006
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import JSONB

revision = "0006"
down_revision = "0004"
branch_labels = None
depends_on = None

_ONLY_XDP = "(SELECT min(id) FROM backend WHERE driver = 'xdp' HAVING count(*) = 1)"


def upgrade() -> None:
    for table in ("kpi_sample", "sla_violation"):
        op.add_column(table, sa.Column("backend_id", sa.BigInteger, nullable=True))
        op.execute(f"UPDATE {table} SET backend_id = {_ONLY_XDP}")
        op.execute(f"DELETE FROM {table} WHERE backend_id IS NULL")
        op.alter_column(table, "backend_id", nullable=False)
        op.create_foreign_key(
            f"fk_{table}_backend_id_backend", table, "backend", ["backend_id"], ["id"], ondelete="CASCADE"
        )
    op.drop_constraint("pk_kpi_sample", "kpi_sample", type_="primary")
    op.create_primary_key("pk_kpi_sample", "kpi_sample", ["slice_id", "backend_id", "lane", "ts"])
    op.drop_index("ix_kpi_sample_slice_ts", table_name="kpi_sample")
    op.create_index("ix_kpi_sample_slice_backend_ts", "kpi_sample", ["slice_id", "backend_id", "ts"])
    op.add_column("sla_violation", sa.Column("evidence", JSONB, nullable=False, server_default="{}"))
    op.create_index("ix_sla_violation_backend_open", "sla_violation", ["slice_id", "backend_id", "ended_at"])


def downgrade() -> None:
    op.drop_index("ix_sla_violation_backend_open", table_name="sla_violation")
    op.drop_column("sla_violation", "evidence")
    op.drop_index("ix_kpi_sample_slice_backend_ts", table_name="kpi_sample")
    op.drop_constraint("pk_kpi_sample", "kpi_sample", type_="primary")
    # several backends' samples of one (slice, lane, ts) cannot share the old key: keep one
    op.execute(
        "DELETE FROM kpi_sample a USING kpi_sample b WHERE a.slice_id = b.slice_id AND a.lane = b.lane "
        "AND a.ts = b.ts AND a.backend_id > b.backend_id"
    )
    op.create_primary_key("pk_kpi_sample", "kpi_sample", ["slice_id", "lane", "ts"])
    op.create_index("ix_kpi_sample_slice_ts", "kpi_sample", ["slice_id", "ts"])
    for table in ("kpi_sample", "sla_violation"):
        op.drop_constraint(f"fk_{table}_backend_id_backend", table, type_="foreignkey")
        op.drop_column(table, "backend_id")
