"""slice footprints precomputed: the generation bump also NOTIFYs (issue #28)

The function behind migration 0015's triggers queues ``NOTIFY sliceportal_footprint`` (empty
payload: PostgreSQL folds a transaction's identical notifications into one, delivered on
commit only) when it bumped a generation, so the leading controller's
``FootprintRefresher`` (services/footprint_refresh.py) recomputes the wanted digests as soon
as the change is committed, before a read asks for them.

Revision ID: 0018_footprint_precompute
Revises: 0016
"""

from alembic import op

revision = "0018_footprint_precompute"
down_revision = "0016"
branch_labels = None
depends_on = None

# the same channel as services/footprint_refresh.py CHANNEL (a migration imports no app code)
CHANNEL = "sliceportal_footprint"

BUMP = """
    EXECUTE 'INSERT INTO slice_footprint_gen (slice_id, gen) '
         || 'SELECT id, nextval(''slice_footprint_gen_seq'') FROM ('
         || 'SELECT DISTINCT x.id FROM (' || TG_ARGV[0] || ') AS x(id) '
         || 'JOIN slice ON slice.id = x.id ORDER BY x.id) AS c '
         || 'ON CONFLICT (slice_id) DO UPDATE SET gen = EXCLUDED.gen';"""


def _function(body: str, declare: str = "") -> str:
    return (
        "CREATE OR REPLACE FUNCTION bump_slice_footprint_gen() RETURNS trigger LANGUAGE plpgsql AS $$\n"
        f"{declare}BEGIN{body}\n    RETURN NULL;\nEND $$"
    )


def upgrade() -> None:
    # only when a generation moved: a statement that changed nothing compiled (a deploy's
    # slice state) wakes no one
    op.execute(
        _function(
            BUMP + "\n    GET DIAGNOSTICS bumped = ROW_COUNT;\n"
            f"    IF bumped > 0 THEN PERFORM pg_notify('{CHANNEL}', ''); END IF;",
            declare="DECLARE bumped bigint;\n",
        )
    )


def downgrade() -> None:
    op.execute(_function(BUMP))
