"""merge the third wave's branches: KPI source (#25) and stored slice footprints (#28)

Revision ID: 0016
Revises: 0013_kpi_source, 0015_slice_footprint_state
"""

revision = "0016"
down_revision = ("0013_kpi_source", "0015_slice_footprint_state")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
