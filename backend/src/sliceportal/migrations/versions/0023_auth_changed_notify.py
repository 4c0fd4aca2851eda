"""a change to who may log in is NOTIFYed, so that API processes may remember credentials (#28)

Revision ID: 0023_auth_changed_notify
Revises: 0022_testbed_command_kind

Each API process remembers the principal of a credential it checked (api/principals.py).
Any UPDATE, DELETE or TRUNCATE of the tables that check reads NOTIFYs ``sliceportal_auth``
at commit, from whatever made it (a worker, the CLI, psql), and every process forgets what
it remembered. One notice per statement: its content is not needed, only that something
changed. New rows change nothing remembered (a new login or key is checked when first used).
"""

from alembic import op

revision = "0023_auth_changed_notify"
down_revision = "0022_testbed_command_kind"
branch_labels = None
depends_on = None

TABLES = ("user_account", "auth_session", "api_key")
FUNCTION = "sliceportal_auth_changed"


def upgrade() -> None:
    op.execute(
        f"CREATE FUNCTION {FUNCTION}() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN PERFORM pg_notify('sliceportal_auth', TG_TABLE_NAME); RETURN NULL; END $$"
    )
    for table in TABLES:
        op.execute(
            f"CREATE TRIGGER {table}_auth_changed AFTER UPDATE OR DELETE OR TRUNCATE ON {table} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION {FUNCTION}()"
        )


def downgrade() -> None:
    for table in TABLES:
        op.execute(f"DROP TRIGGER {table}_auth_changed ON {table}")
    op.execute(f"DROP FUNCTION {FUNCTION}()")
