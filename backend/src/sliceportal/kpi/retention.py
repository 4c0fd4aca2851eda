"""Retention: 1 s samples become 1 min averages after an hour, everything goes after a week.

At 1 Hz, 16 slices x 8 lanes are 128 rows/s; kept raw for a week that would be 77 M rows.
Downsampled they are 128 x 60 x 168 ≈ 1.3 M, plus the last hour raw (460 k).
"""

from __future__ import annotations

from datetime import datetime, timedelta

from sqlalchemy import text
from sqlalchemy.orm import Session

RAW_FOR = timedelta(hours=1)
KEEP_FOR = timedelta(days=7)

_DOWNSAMPLE = text("""
WITH old AS (
    DELETE FROM kpi_sample WHERE interval_s < 60 AND ts < :cutoff RETURNING *
)
INSERT INTO kpi_sample (slice_id, backend_id, lane, source, ts, interval_s, tx_packets, rx_packets, tx_bytes, rx_bytes,
                        throughput_bps, loss_pct, delay_mean_ms, delay_p50_ms, delay_p99_ms, jitter_ms,
                        drops, ecn_marks)
SELECT slice_id, backend_id, lane, source, date_trunc('minute', ts) + interval '1 minute', 60,
       sum(tx_packets), sum(rx_packets), sum(tx_bytes), sum(rx_bytes),
       sum(rx_bytes) * 8.0 / 60, CASE WHEN sum(tx_packets) > 0
            THEN 100.0 * greatest(sum(tx_packets) - sum(rx_packets), 0) / sum(tx_packets) ELSE 0 END,
       avg(delay_mean_ms), avg(delay_p50_ms), max(delay_p99_ms), avg(jitter_ms),
       '{}'::jsonb, sum(ecn_marks)
FROM old GROUP BY slice_id, backend_id, lane, source, date_trunc('minute', ts)
ON CONFLICT (slice_id, backend_id, lane, source, ts) DO NOTHING
""")


def apply_retention(session: Session, now: datetime) -> None:
    session.execute(_DOWNSAMPLE, {"cutoff": now - RAW_FOR})
    session.execute(text("DELETE FROM kpi_sample WHERE ts < :cutoff"), {"cutoff": now - KEEP_FOR})
    session.commit()
