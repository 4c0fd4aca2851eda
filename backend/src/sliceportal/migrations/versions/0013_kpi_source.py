"""KPI samples keyed by source: kpi_sample (slice, backend, lane, source, ts)

'counters' (the data plane's own counters, read by the KPI collector), 'probe' (active
probes through the ingest API) and 'testbed' (the emulator's meter) report the same slice
and lane side by side. Every sample stored before this came from the testbed's meter.

Revision ID: 0013_kpi_source
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op

revision = "0013_kpi_source"
# the chain's 0012 (0012_subscriber_guarantee.py) is revision "0012"
down_revision = "0012"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.add_column("kpi_sample", sa.Column("source", sa.String(16), nullable=False, server_default="testbed"))
    op.alter_column("kpi_sample", "source", server_default=None)  # every writer names its source
    op.drop_constraint("pk_kpi_sample", "kpi_sample", type_="primary")
    # source before ts: the newest sample of each (backend, lane, source) stays one index probe
    op.create_primary_key("pk_kpi_sample", "kpi_sample", ["slice_id", "backend_id", "lane", "source", "ts"])


def downgrade() -> None:
    # one source per key again: the testbed's meter wins, as it was the only writer before
    op.execute(
        "DELETE FROM kpi_sample a USING kpi_sample b WHERE a.slice_id = b.slice_id "
        "AND a.backend_id = b.backend_id AND a.lane = b.lane AND a.ts = b.ts "
        "AND a.source <> b.source AND (b.source = 'testbed' OR (a.source <> 'testbed' AND a.source > b.source))"
    )
    op.drop_constraint("pk_kpi_sample", "kpi_sample", type_="primary")
    op.create_primary_key("pk_kpi_sample", "kpi_sample", ["slice_id", "backend_id", "lane", "ts"])
    op.drop_column("kpi_sample", "source")
