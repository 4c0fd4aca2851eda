"""login sessions (revocable tokens), atomic lock-out, tenant-bound keys, case-insensitive user names

Revision ID: 0005
Revises: 0004
"""

import sqlalchemy as sa
from alembic import op

revision = "0005"
down_revision = "0004"
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "auth_session",
        sa.Column("id", sa.String(43), primary_key=True),
        sa.Column(
            "user_id",
            sa.BigInteger,
            sa.ForeignKey("user_account.id", ondelete="CASCADE", name="fk_auth_session_user_id_user_account"),
            nullable=False,
        ),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.func.now(), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("address", sa.String(64), nullable=False, server_default=""),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("revoked_reason", sa.String(40), nullable=True),
        sa.PrimaryKeyConstraint("id", name="pk_auth_session"),
    )
    op.create_index("ix_auth_session_user_id", "auth_session", ["user_id"])
    # Refresh tokens issued before sessions existed belong to no session: they are dropped
    # (their users log in again), which also ends any token minted with the old default secret.
    op.execute("DELETE FROM refresh_token")
    op.add_column(
        "refresh_token",
        sa.Column(
            "session_id",
            sa.String(43),
            sa.ForeignKey("auth_session.id", ondelete="CASCADE", name="fk_refresh_token_session_id_auth_session"),
            nullable=False,
        ),
    )
    op.create_index("ix_refresh_token_session_id", "refresh_token", ["session_id"])

    op.create_table(
        "login_throttle",
        sa.Column("username", sa.String(80), nullable=False),
        sa.Column("address", sa.String(64), nullable=False),
        sa.Column("failures", sa.Integer, nullable=False, server_default="0"),
        sa.Column("window_start", sa.DateTime(timezone=True), nullable=False),
        sa.Column("locked_until", sa.DateTime(timezone=True), nullable=True),
        sa.Column("lockouts", sa.Integer, nullable=False, server_default="0"),
        sa.PrimaryKeyConstraint("username", "address", name="pk_login_throttle"),
    )

    op.add_column(
        "api_key",
        sa.Column(
            "tenant_id",
            sa.BigInteger,
            sa.ForeignKey("tenant.id", ondelete="CASCADE", name="fk_api_key_tenant_id_tenant"),
            nullable=True,
        ),
    )

    op.drop_constraint("uq_user_account_username", "user_account", type_="unique")
    op.create_index("uq_user_account_username", "user_account", [sa.text("lower(username)")], unique=True)


def downgrade() -> None:
    op.drop_index("uq_user_account_username", "user_account")
    op.create_unique_constraint("uq_user_account_username", "user_account", ["username"])
    op.drop_column("api_key", "tenant_id")
    op.drop_table("login_throttle")
    op.drop_index("ix_refresh_token_session_id", "refresh_token")
    op.drop_column("refresh_token", "session_id")
    op.drop_table("auth_session")
