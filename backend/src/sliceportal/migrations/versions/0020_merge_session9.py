"""merge the session's branches: deploy and import jobs (#26) and precomputed footprints (#28)

Revision ID: 0020
Revises: 0019_import_jobs, 0018_footprint_precompute
"""

revision = "0020"
down_revision = ("0019_import_jobs", "0018_footprint_precompute")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
