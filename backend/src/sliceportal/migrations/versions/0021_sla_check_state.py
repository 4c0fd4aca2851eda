"""incremental SLA state per (slice, backend, check, lane); kpi_sample validated per batch (#25, #29)

Revision ID: 0021_sla_check_state
Revises: 0020

``sla_check_state`` holds what the hold-down needs between intervals (kpi/sla.py), so an
ingest no longer re-reads the SLA window of stored samples. One head row per (slice, backend)
(metric '', lane -1) is the lock every ingest of that pair takes first, so several API
workers judge its intervals one after the other, alike.

``kpi_sample`` loses its two foreign keys: PostgreSQL checked them once per row (560 ms of a
10 000-row insert). ``kpi.store`` checks the batch's distinct slice and backend ids once,
taking the same FOR KEY SHARE lock the foreign key took, so a slice or backend cannot be
deleted under an ingest; the ON DELETE CASCADE becomes a trigger on slice and backend.
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0021_sla_check_state"
down_revision = "0020"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "sla_check_state",
        sa.Column("slice_id", sa.BigInteger(), nullable=False),
        sa.Column("backend_id", sa.BigInteger(), nullable=False),
        sa.Column("metric", sa.String(40), nullable=False),  # '' for the head row
        sa.Column("lane", sa.Integer(), nullable=False),  # -1: the head row or the slice-wide rate check
        sa.Column("state", postgresql.JSONB(), nullable=False, server_default="{}"),
        sa.ForeignKeyConstraint(
            ["slice_id"], ["slice.id"], name=op.f("fk_sla_check_state_slice_id_slice"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["backend_id"], ["backend.id"], name=op.f("fk_sla_check_state_backend_id_backend"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("slice_id", "backend_id", "metric", "lane", name=op.f("pk_sla_check_state")),
    )
    op.execute("ALTER TABLE kpi_sample DROP CONSTRAINT IF EXISTS fk_kpi_sample_slice_id_slice")
    op.execute("ALTER TABLE kpi_sample DROP CONSTRAINT IF EXISTS fk_kpi_sample_backend_id_backend")
    op.execute("""
        CREATE FUNCTION kpi_sample_cascade() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF TG_TABLE_NAME = 'slice' THEN
                DELETE FROM kpi_sample WHERE slice_id = OLD.id;
            ELSE
                DELETE FROM kpi_sample WHERE backend_id = OLD.id;
            END IF;
            RETURN OLD;
        END $$""")
    for table in ("slice", "backend"):
        op.execute(
            f"CREATE TRIGGER {table}_kpi_sample_cascade AFTER DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION kpi_sample_cascade()"
        )


def downgrade() -> None:
    for table in ("slice", "backend"):
        op.execute(f"DROP TRIGGER {table}_kpi_sample_cascade ON {table}")
    op.execute("DROP FUNCTION kpi_sample_cascade()")
    op.execute(
        "DELETE FROM kpi_sample k WHERE NOT EXISTS (SELECT 1 FROM slice s WHERE s.id = k.slice_id) "
        "OR NOT EXISTS (SELECT 1 FROM backend b WHERE b.id = k.backend_id)"
    )
    op.create_foreign_key(
        "fk_kpi_sample_slice_id_slice", "kpi_sample", "slice", ["slice_id"], ["id"], ondelete="CASCADE"
    )
    op.create_foreign_key(
        "fk_kpi_sample_backend_id_backend", "kpi_sample", "backend", ["backend_id"], ["id"], ondelete="CASCADE"
    )
    op.drop_table("sla_check_state")
