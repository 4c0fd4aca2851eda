"""seed the slice-type catalogue: every row of seed 000 Table 1, exactly as printed

Revision ID: 0002
Revises: 0001
"""

import sqlalchemy as sa
from alembic import op
from sqlalchemy.dialects import postgresql

revision = "0002"
down_revision = "0001"
branch_labels = None
depends_on = None

# (name, # differentiated 5G user traffic, priority lanes, possible use cases)
TABLE_1 = [
    ("Best Effort", 1, [0], ["Enhanced Mobile Broadband", "Massive MTC"]),
    ("Best Effort Reliable", 1, [1], ["Enhanced Reliable Mobile Broadband", "Massive MTC"]),
    ("Low Latency", 1, [2], ["Low-Latency Communications"]),
    ("Low Latency Reliable", 1, [3], ["Low-Latency Reliable Communications"]),
    ("Ultra-Low Latency Reliable", 1, [4], ["Ultra-Low Latency Reliable Communications"]),
    ("Ultra-Low Latency High-Reliable", 1, [5], ["Ultra-Low Latency High Reliable Communications"]),
    ("Critical Communications", 1, [6], ["Critical Communications"]),
    ("Network Control", 1, [7], ["Reserved to Control and Management Network"]),
    (
        "Dual Best Effort + Low Latency",
        2,
        [0, 2],
        ["Enhanced Mobile Broadband", "Massive MTC", "Low-Latency Communications"],
    ),
    (
        "Dual Best Effort + Low Latency Reliable",
        2,
        [1, 3],
        ["Enhanced Reliable Mobile Broadband", "Massive MTC", "Low-Latency Reliable Communications"],
    ),
    (
        "Dual Best Effort + Ultra-Low Latency",
        2,
        [0, 4],
        ["Enhanced Mobile Broadband", "Massive MTC", "Ultra-Low Latency Reliable Communications"],
    ),
    (
        "Dual Best Effort + Ultra-Low Latency Reliable",
        2,
        [1, 5],
        ["Enhanced Reliable Mobile Broadband", "Massive MTC", "Ultra-Low Latency High Reliable Communications"],
    ),
    (
        "Dual Best Effort Reliable + Critical Communications",
        2,
        [1, 6],
        ["Enhanced Reliable Mobile Broadband", "Massive MTC", "Dedicated Ultra-Low Latency Channel"],
    ),
    (
        "Triple Best Effort + Low-Latency + Ultra Low Latency",
        3,
        [0, 2, 4],
        [
            "Enhanced Mobile Broadband",
            "Massive MTC",
            "Low-Latency Communications",
            "Ultra-Low Latency Reliable Communications",
        ],
    ),
    (
        "Triple Best Effort + Low-Latency + Ultra Low Latency Reliable",
        3,
        [1, 3, 5],
        [
            "Enhanced Reliable Mobile Broadband",
            "Massive MTC",
            "Low-Latency Reliable Communications",
            "Ultra-Low Latency High Reliable Communications",
        ],
    ),
    ("Flexible Slice", 4, [0, 2, 4, 6], ["Any Communication"]),
    ("Reliable Flexible Slice", 4, [1, 3, 5, 6], ["Any Communication with High Reliability"]),
]


def upgrade() -> None:
    table = sa.table(
        "slice_type",
        sa.column("name", sa.String),
        sa.column("traffic_classes", sa.Integer),
        sa.column("lanes", postgresql.ARRAY(sa.Integer)),
        sa.column("use_cases", postgresql.ARRAY(sa.Text)),
        sa.column("position", sa.Integer),
    )
    op.bulk_insert(
        table,
        [
            {"name": n, "traffic_classes": c, "lanes": lanes, "use_cases": uses, "position": i}
            for i, (n, c, lanes, uses) in enumerate(TABLE_1, start=1)
        ],
    )


def downgrade() -> None:
    op.execute("DELETE FROM slice_type")
