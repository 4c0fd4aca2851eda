"""slice status as stored state: footprint generations, wanted and held digests (issue #28)

``slice_footprint_gen`` is bumped by triggers, in the changing transaction, whenever what a
slice compiles from changes: the slice row (except its deploy state and bookkeeping), its
service classes, intents and subscriber memberships, its subscribers' rows, its tenant and
its slice type. Triggers, not hooks in the services: every writer (API workers, the
subscriber import, the controller, a psql session) is covered. They are statement-level with
transition tables, so a 10 k-row import bumps each slice once, in slice-id order (a stable
lock order between concurrent writers).

Revision ID: 0015_slice_footprint_state
Revises: 0012
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects.postgresql import ARRAY, JSONB

revision = "0015_slice_footprint_state"
# the chain's 0012 (0012_subscriber_guarantee.py) is revision "0012"
down_revision = "0012"
branch_labels = None
depends_on = None

# columns whose change does not change what a slice compiles to
BOOKKEEPING = "'updated_at' - 'version' - 'created_at'"
CHANGED = f"(to_jsonb(n) - {BOOKKEEPING}) IS DISTINCT FROM (to_jsonb(o) - {BOOKKEEPING})"

# (table, event, query over the transition tables new_rows / old_rows giving the slice ids)
TRIGGERS = [
    (
        "slice",
        "UPDATE",
        "SELECT n.id FROM new_rows n JOIN old_rows o ON o.id = n.id WHERE "
        f"(to_jsonb(n) - 'state' - 'description' - {BOOKKEEPING}) IS DISTINCT FROM "
        f"(to_jsonb(o) - 'state' - 'description' - {BOOKKEEPING})",
    ),
    *[
        (table, event, query)
        for table in ("service_class", "intent", "subscriber_slice")
        for event, query in (
            ("INSERT", "SELECT slice_id FROM new_rows"),
            ("DELETE", "SELECT slice_id FROM old_rows"),
            ("UPDATE", "SELECT slice_id FROM new_rows UNION SELECT slice_id FROM old_rows"),
        )
    ],
    (
        "subscriber",
        "UPDATE",
        "SELECT ss.slice_id FROM new_rows n JOIN old_rows o ON o.id = n.id "
        f"JOIN subscriber_slice ss ON ss.subscriber_id = n.id WHERE {CHANGED}",
    ),
    (
        "tenant",
        "UPDATE",
        "SELECT s.id FROM new_rows n JOIN old_rows o ON o.id = n.id "
        f"JOIN slice s ON s.tenant_id = n.id WHERE {CHANGED}",
    ),
    (
        "slice_type",
        "UPDATE",
        "SELECT s.id FROM new_rows n JOIN old_rows o ON o.id = n.id "
        f"JOIN slice s ON s.slice_type_id = n.id WHERE {CHANGED}",
    ),
]


def _name(table: str, event: str) -> str:
    return f"footprint_gen_{table}_{event.lower()}"


def upgrade() -> None:
    op.execute("CREATE SEQUENCE slice_footprint_gen_seq")
    op.create_table(
        "slice_footprint_gen",
        sa.Column(
            "slice_id",
            sa.BigInteger,
            sa.ForeignKey("slice.id", ondelete="CASCADE", name=op.f("fk_slice_footprint_gen_slice_id_slice")),
            primary_key=True,
        ),
        sa.Column("gen", sa.BigInteger, nullable=False),
    )
    op.create_table(
        "backend_footprint",
        sa.Column("backend_id", sa.BigInteger, primary_key=True),
        sa.Column("rule_set_id", sa.BigInteger, nullable=False),
        sa.Column("input_key", sa.String(32), nullable=False),
        sa.Column("wanted", JSONB, nullable=False),
        sa.Column("error", sa.Text, nullable=False, server_default=""),
        sa.Column("computed_at", sa.DateTime(timezone=True), nullable=False, server_default=sa.func.now()),
    )
    op.create_table(
        "rule_set_footprint",
        sa.Column("rule_set_id", sa.BigInteger, primary_key=True),
        sa.Column("digests", JSONB, nullable=False),
        sa.Column("refs", ARRAY(sa.BigInteger), nullable=False),
        sa.Column("target", JSONB, nullable=False),
    )
    # TG_ARGV[0]: a query over the statement's transition tables naming the slices it changed
    op.execute("""
        CREATE FUNCTION bump_slice_footprint_gen() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
          EXECUTE 'INSERT INTO slice_footprint_gen (slice_id, gen) '
               || 'SELECT id, nextval(''slice_footprint_gen_seq'') FROM ('
               || 'SELECT DISTINCT x.id FROM (' || TG_ARGV[0] || ') AS x(id) '
               || 'JOIN slice ON slice.id = x.id ORDER BY x.id) AS c '
               || 'ON CONFLICT (slice_id) DO UPDATE SET gen = EXCLUDED.gen';
          RETURN NULL;
        END $$""")
    for table, event, query in TRIGGERS:
        refs = {
            "INSERT": "NEW TABLE AS new_rows",
            "DELETE": "OLD TABLE AS old_rows",
            "UPDATE": "OLD TABLE AS old_rows NEW TABLE AS new_rows",
        }[event]
        quoted = query.replace("'", "''")
        op.execute(
            f"CREATE TRIGGER {_name(table, event)} AFTER {event} ON {table} REFERENCING {refs} "
            f"FOR EACH STATEMENT EXECUTE FUNCTION bump_slice_footprint_gen('{quoted}')"
        )


def downgrade() -> None:
    for table, event, _ in TRIGGERS:
        op.execute(f"DROP TRIGGER {_name(table, event)} ON {table}")
    op.execute("DROP FUNCTION bump_slice_footprint_gen()")
    op.drop_table("rule_set_footprint")
    op.drop_table("backend_footprint")
    op.drop_table("slice_footprint_gen")
    op.execute("DROP SEQUENCE slice_footprint_gen_seq")
