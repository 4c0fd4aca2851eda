"""domain schema

Revision ID: 0001
Revises: (none)
Create Date: 2026-11-22 04:58:36.576967
"""

from alembic import op
import sqlalchemy as sa
from sqlalchemy.dialects import postgresql

revision = "0001"
down_revision = None
branch_labels = None
depends_on = None


def upgrade() -> None:
    op.create_table(
        "audit_log",
        sa.Column("ts", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("actor_id", sa.BigInteger(), nullable=True),
        sa.Column("actor", sa.String(length=120), nullable=False),
        sa.Column("via", sa.String(length=60), nullable=False),
        sa.Column("action", sa.String(length=20), nullable=False),
        sa.Column("object_type", sa.String(length=60), nullable=False),
        sa.Column("object_id", sa.BigInteger(), nullable=True),
        sa.Column("tenant_id", sa.BigInteger(), nullable=True),
        sa.Column("before", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("after", postgresql.JSONB(astext_type=sa.Text()), nullable=True),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_audit_log")),
    )
    op.create_index("ix_audit_log_object", "audit_log", ["object_type", "object_id"], unique=False)
    op.create_index(op.f("ix_audit_log_tenant_id"), "audit_log", ["tenant_id"], unique=False)
    op.create_index(op.f("ix_audit_log_ts"), "audit_log", ["ts"], unique=False)
    op.create_table(
        "backend",
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("driver", sa.String(length=60), nullable=False),
        sa.Column("options", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("paths", sa.Integer(), nullable=False),
        sa.Column("lanes", sa.Integer(), nullable=False),
        sa.Column("capacity", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("health", sa.String(length=20), nullable=False),
        sa.Column("health_detail", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_backend")),
        sa.UniqueConstraint("name", name=op.f("uq_backend_name")),
    )
    op.create_table(
        "login_attempt",
        sa.Column("username", sa.String(length=80), nullable=False),
        sa.Column("address", sa.String(length=64), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ok", sa.Boolean(), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_login_attempt")),
    )
    op.create_index("ix_login_attempt_user_ts", "login_attempt", ["username", "ts"], unique=False)
    op.create_table(
        "slice_type",
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("traffic_classes", sa.Integer(), nullable=False),
        sa.Column("lanes", sa.ARRAY(sa.Integer()), nullable=False),
        sa.Column("use_cases", sa.ARRAY(sa.Text()), nullable=False),
        sa.Column("position", sa.Integer(), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slice_type")),
        sa.UniqueConstraint("name", name=op.f("uq_slice_type_name")),
    )
    op.create_table(
        "tenant",
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("vni", sa.Integer(), nullable=False),
        sa.Column("vlan", sa.Integer(), nullable=True),
        sa.Column("ue_pool", postgresql.CIDR(), nullable=True),
        sa.Column("contact", sa.String(length=200), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.CheckConstraint("vlan BETWEEN 1 AND 4094", name=op.f("ck_tenant_vlan_range")),
        sa.CheckConstraint("vni BETWEEN 1 AND 16777215", name=op.f("ck_tenant_vni_range")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_tenant")),
        sa.UniqueConstraint("name", name=op.f("uq_tenant_name")),
        sa.UniqueConstraint("vlan", name=op.f("uq_tenant_vlan")),
        sa.UniqueConstraint("vni", name=op.f("uq_tenant_vni")),
    )
    op.create_table(
        "rule_set",
        sa.Column("backend_id", sa.BigInteger(), nullable=False),
        sa.Column("number", sa.Integer(), nullable=False),
        sa.Column("digest", sa.String(length=32), nullable=False),
        sa.Column("ir", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("plan", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("explanation", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("created_by", sa.String(length=120), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["backend_id"], ["backend.id"], name=op.f("fk_rule_set_backend_id_backend"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_rule_set")),
        sa.UniqueConstraint("backend_id", "number", name=op.f("uq_rule_set_backend_id_number")),
    )
    op.create_index(op.f("ix_rule_set_backend_id"), "rule_set", ["backend_id"], unique=False)
    op.create_table(
        "slice",
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("slice_type_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("description", sa.Text(), nullable=False),
        sa.Column("guaranteed_mbps", sa.Float(), nullable=True),
        sa.Column("rate_limit_mbps", sa.Float(), nullable=True),
        sa.Column("max_delay_ms", sa.Float(), nullable=True),
        sa.Column("ecn_delay_ms", sa.Float(), nullable=True),
        sa.Column("max_loss_pct", sa.Float(), nullable=True),
        sa.Column("max_jitter_ms", sa.Float(), nullable=True),
        sa.Column("path_mode", sa.String(length=20), nullable=False),
        sa.Column("state", sa.String(length=20), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.CheckConstraint("guaranteed_mbps IS NULL OR guaranteed_mbps > 0", name=op.f("ck_slice_guaranteed_positive")),
        sa.CheckConstraint("rate_limit_mbps IS NULL OR rate_limit_mbps > 0", name=op.f("ck_slice_rate_positive")),
        sa.ForeignKeyConstraint(["slice_type_id"], ["slice_type.id"], name=op.f("fk_slice_slice_type_id_slice_type")),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_slice_tenant_id_tenant"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_slice")),
        sa.UniqueConstraint("tenant_id", "name", name=op.f("uq_slice_tenant_id_name")),
    )
    op.create_index(op.f("ix_slice_tenant_id"), "slice", ["tenant_id"], unique=False)
    op.create_table(
        "subscriber",
        sa.Column("tenant_id", sa.BigInteger(), nullable=False),
        sa.Column("imsi", sa.String(length=15), nullable=False),
        sa.Column("ue_ip", postgresql.INET(), nullable=False),
        sa.Column("teids", sa.ARRAY(sa.BigInteger()), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_subscriber_tenant_id_tenant"), ondelete="RESTRICT"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_subscriber")),
        sa.UniqueConstraint("tenant_id", "imsi", name=op.f("uq_subscriber_tenant_id_imsi")),
        sa.UniqueConstraint("tenant_id", "ue_ip", name=op.f("uq_subscriber_tenant_id_ue_ip")),
    )
    op.create_index("ix_subscriber_teids", "subscriber", ["teids"], unique=False, postgresql_using="gin")
    op.create_index(op.f("ix_subscriber_tenant_id"), "subscriber", ["tenant_id"], unique=False)
    op.create_table(
        "user_account",
        sa.Column("username", sa.String(length=80), nullable=False),
        sa.Column("password_hash", sa.String(length=200), nullable=False),
        sa.Column("role", sa.String(length=20), nullable=False),
        sa.Column("tenant_id", sa.BigInteger(), nullable=True),
        sa.Column("full_name", sa.String(length=120), nullable=False),
        sa.Column("is_active", sa.Boolean(), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["tenant_id"], ["tenant.id"], name=op.f("fk_user_account_tenant_id_tenant"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_user_account")),
        sa.UniqueConstraint("username", name=op.f("uq_user_account_username")),
    )
    op.create_table(
        "api_key",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("prefix", sa.String(length=16), nullable=False),
        sa.Column("key_hash", sa.String(length=64), nullable=False),
        sa.Column("scopes", sa.ARRAY(sa.String(length=16)), nullable=False),
        sa.Column("revoked_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("last_used_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["user_account.id"], name=op.f("fk_api_key_user_id_user_account"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_api_key")),
        sa.UniqueConstraint("prefix", name=op.f("uq_api_key_prefix")),
    )
    op.create_index(op.f("ix_api_key_user_id"), "api_key", ["user_id"], unique=False)
    op.create_table(
        "deployment",
        sa.Column("backend_id", sa.BigInteger(), nullable=False),
        sa.Column("rule_set_id", sa.BigInteger(), nullable=False),
        sa.Column("previous_rule_set_id", sa.BigInteger(), nullable=True),
        sa.Column("kind", sa.String(length=20), nullable=False),
        sa.Column("status", sa.String(length=20), nullable=False),
        sa.Column("actor", sa.String(length=120), nullable=False),
        sa.Column("diff", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("error", sa.Text(), nullable=False),
        sa.Column("rolled_back", sa.Boolean(), nullable=True),
        sa.Column("finished_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("duration_s", sa.Float(), nullable=True),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.ForeignKeyConstraint(
            ["backend_id"], ["backend.id"], name=op.f("fk_deployment_backend_id_backend"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["previous_rule_set_id"], ["rule_set.id"], name=op.f("fk_deployment_previous_rule_set_id_rule_set")
        ),
        sa.ForeignKeyConstraint(["rule_set_id"], ["rule_set.id"], name=op.f("fk_deployment_rule_set_id_rule_set")),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_deployment")),
    )
    op.create_index(op.f("ix_deployment_backend_id"), "deployment", ["backend_id"], unique=False)
    op.create_table(
        "kpi_sample",
        sa.Column("slice_id", sa.BigInteger(), nullable=False),
        sa.Column("lane", sa.Integer(), nullable=False),
        sa.Column("ts", sa.DateTime(timezone=True), nullable=False),
        sa.Column("interval_s", sa.Float(), nullable=False),
        sa.Column("tx_packets", sa.BigInteger(), nullable=False),
        sa.Column("rx_packets", sa.BigInteger(), nullable=False),
        sa.Column("tx_bytes", sa.BigInteger(), nullable=False),
        sa.Column("rx_bytes", sa.BigInteger(), nullable=False),
        sa.Column("throughput_bps", sa.Float(), nullable=False),
        sa.Column("loss_pct", sa.Float(), nullable=False),
        sa.Column("delay_mean_ms", sa.Float(), nullable=True),
        sa.Column("delay_p50_ms", sa.Float(), nullable=True),
        sa.Column("delay_p99_ms", sa.Float(), nullable=True),
        sa.Column("jitter_ms", sa.Float(), nullable=True),
        sa.Column("drops", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("ecn_marks", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["slice_id"], ["slice.id"], name=op.f("fk_kpi_sample_slice_id_slice"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("slice_id", "lane", "ts", name=op.f("pk_kpi_sample")),
    )
    op.create_index("ix_kpi_sample_slice_ts", "kpi_sample", ["slice_id", "ts"], unique=False)
    op.create_table(
        "refresh_token",
        sa.Column("user_id", sa.BigInteger(), nullable=False),
        sa.Column("token_hash", sa.String(length=64), nullable=False),
        sa.Column("expires_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("revoked", sa.Boolean(), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.ForeignKeyConstraint(
            ["user_id"], ["user_account.id"], name=op.f("fk_refresh_token_user_id_user_account"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_refresh_token")),
        sa.UniqueConstraint("token_hash", name=op.f("uq_refresh_token_token_hash")),
    )
    op.create_index(op.f("ix_refresh_token_user_id"), "refresh_token", ["user_id"], unique=False)
    op.create_table(
        "service_class",
        sa.Column("slice_id", sa.BigInteger(), nullable=False),
        sa.Column("name", sa.String(length=120), nullable=False),
        sa.Column("lane", sa.Integer(), nullable=False),
        sa.Column("dst_ports", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("dscp", sa.ARRAY(sa.Integer()), nullable=False),
        sa.Column("protocol", sa.String(length=8), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.Column("created_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("updated_at", sa.DateTime(timezone=True), server_default=sa.text("now()"), nullable=False),
        sa.Column("version", sa.Integer(), nullable=False),
        sa.ForeignKeyConstraint(
            ["slice_id"], ["slice.id"], name=op.f("fk_service_class_slice_id_slice"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_service_class")),
        sa.UniqueConstraint("slice_id", "name", name=op.f("uq_service_class_slice_id_name")),
    )
    op.create_index(op.f("ix_service_class_slice_id"), "service_class", ["slice_id"], unique=False)
    op.create_table(
        "sla_violation",
        sa.Column("slice_id", sa.BigInteger(), nullable=False),
        sa.Column("lane", sa.Integer(), nullable=True),
        sa.Column("metric", sa.String(length=40), nullable=False),
        sa.Column("threshold", sa.Float(), nullable=False),
        sa.Column("worst", sa.Float(), nullable=False),
        sa.Column("started_at", sa.DateTime(timezone=True), nullable=False),
        sa.Column("ended_at", sa.DateTime(timezone=True), nullable=True),
        sa.Column("detail", postgresql.JSONB(astext_type=sa.Text()), nullable=False),
        sa.Column("id", sa.BigInteger(), autoincrement=True, nullable=False),
        sa.ForeignKeyConstraint(
            ["slice_id"], ["slice.id"], name=op.f("fk_sla_violation_slice_id_slice"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("id", name=op.f("pk_sla_violation")),
    )
    op.create_index(op.f("ix_sla_violation_slice_id"), "sla_violation", ["slice_id"], unique=False)
    op.create_table(
        "slice_backend",
        sa.Column("slice_id", sa.BigInteger(), nullable=False),
        sa.Column("backend_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["backend_id"], ["backend.id"], name=op.f("fk_slice_backend_backend_id_backend"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["slice_id"], ["slice.id"], name=op.f("fk_slice_backend_slice_id_slice"), ondelete="CASCADE"
        ),
        sa.PrimaryKeyConstraint("slice_id", "backend_id", name=op.f("pk_slice_backend")),
    )
    op.create_table(
        "subscriber_slice",
        sa.Column("subscriber_id", sa.BigInteger(), nullable=False),
        sa.Column("slice_id", sa.BigInteger(), nullable=False),
        sa.ForeignKeyConstraint(
            ["slice_id"], ["slice.id"], name=op.f("fk_subscriber_slice_slice_id_slice"), ondelete="CASCADE"
        ),
        sa.ForeignKeyConstraint(
            ["subscriber_id"],
            ["subscriber.id"],
            name=op.f("fk_subscriber_slice_subscriber_id_subscriber"),
            ondelete="CASCADE",
        ),
        sa.PrimaryKeyConstraint("subscriber_id", "slice_id", name=op.f("pk_subscriber_slice")),
    )
    op.create_index("ix_subscriber_slice_slice_id", "subscriber_slice", ["slice_id"], unique=False)


def downgrade() -> None:
    op.drop_index("ix_subscriber_slice_slice_id", table_name="subscriber_slice")
    op.drop_table("subscriber_slice")
    op.drop_table("slice_backend")
    op.drop_index(op.f("ix_sla_violation_slice_id"), table_name="sla_violation")
    op.drop_table("sla_violation")
    op.drop_index(op.f("ix_service_class_slice_id"), table_name="service_class")
    op.drop_table("service_class")
    op.drop_index(op.f("ix_refresh_token_user_id"), table_name="refresh_token")
    op.drop_table("refresh_token")
    op.drop_index("ix_kpi_sample_slice_ts", table_name="kpi_sample")
    op.drop_table("kpi_sample")
    op.drop_index(op.f("ix_deployment_backend_id"), table_name="deployment")
    op.drop_table("deployment")
    op.drop_index(op.f("ix_api_key_user_id"), table_name="api_key")
    op.drop_table("api_key")
    op.drop_table("user_account")
    op.drop_index(op.f("ix_subscriber_tenant_id"), table_name="subscriber")
    op.drop_index("ix_subscriber_teids", table_name="subscriber", postgresql_using="gin")
    op.drop_table("subscriber")
    op.drop_index(op.f("ix_slice_tenant_id"), table_name="slice")
    op.drop_table("slice")
    op.drop_index(op.f("ix_rule_set_backend_id"), table_name="rule_set")
    op.drop_table("rule_set")
    op.drop_table("tenant")
    op.drop_table("slice_type")
    op.drop_index("ix_login_attempt_user_ts", table_name="login_attempt")
    op.drop_table("login_attempt")
    op.drop_table("backend")
    op.drop_index(op.f("ix_audit_log_ts"), table_name="audit_log")
    op.drop_index(op.f("ix_audit_log_tenant_id"), table_name="audit_log")
    op.drop_index("ix_audit_log_object", table_name="audit_log")
    op.drop_table("audit_log")
