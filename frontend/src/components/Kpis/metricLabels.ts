// Words and units for the API's metric names (loss_pct, delay_p99_ms …): a user reads
// "p99 delay, lane 2 (ms)", never "delay_p99_ms lane 2".
import { spoken } from "../common/spoken";

interface MetricWords {
  name: string;
  unit: string;
}

const METRICS: Record<string, MetricWords> = {
  loss_pct: { name: "loss", unit: "%" },
  delay_p99_ms: { name: "p99 delay", unit: "ms" },
  delay_p50_ms: { name: "median delay", unit: "ms" },
  delay_mean_ms: { name: "mean delay", unit: "ms" },
  jitter_ms: { name: "jitter", unit: "ms" },
  throughput_mbps: { name: "guaranteed rate", unit: "Mbit/s" },
  throughput_bps: { name: "throughput", unit: "bit/s" },
};

/** "p99 delay" for delay_p99_ms; an unknown name with its underscores spoken as spaces. */
export function metricName(metric: string): string {
  return METRICS[metric]?.name ?? spoken(metric);
}

/** "ms" for delay_p99_ms; "" when unknown. */
export function metricUnit(metric: string): string {
  return METRICS[metric]?.unit ?? "";
}

/** "p99 delay, lane 2 (ms)"; "loss, all lanes (%)" without a lane. */
export function metricLabel(metric: string, lane?: number | null): string {
  const unit = metricUnit(metric);
  const where = lane === undefined ? "" : lane === null ? ", all lanes" : `, lane ${lane}`;
  return `${metricName(metric)}${where}${unit ? ` (${unit})` : ""}`;
}
