"""merge the feature branches: backend link capacity / admission (0008) and intents (0009)

Revision ID: 0010
Revises: 0008, 0009
"""

revision = "0010"
down_revision = ("0008", "0009")
branch_labels = None
depends_on = None


def upgrade() -> None:
    pass


def downgrade() -> None:
    pass
