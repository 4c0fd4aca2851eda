"""merge the feature branches: sessions / lock-out (0005) and KPIs per backend (0006)

Revision ID: 0007
Revises: 0005, 0006
"""

revision = "0007"
down_revision = ("0005", "0006")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
