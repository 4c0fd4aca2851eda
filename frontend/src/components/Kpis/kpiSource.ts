// KPI samples of one slice, polled once a second while the page is open.
// The KPI endpoint is not in openapi.json yet, so its shape is checked at runtime here
// (field names follow the backend's KpiSample model); once it lands, switch to the generated types.
import { useQuery } from "@tanstack/react-query";
import { authFetch } from "../../api/client";
import { problemFrom } from "../../api/problem";
import { useHasPath } from "../../api/features";

export const KPI_PATH = "/api/v1/slices/{slice_id}/kpis";

export interface KpiSample {
  ts: string;
  lane: number;
  throughput_bps: number;
  loss_pct: number;
  delay_mean_ms: number | null;
  delay_p99_ms: number | null;
  jitter_ms: number | null;
}

function asSample(v: unknown): KpiSample | null {
  if (typeof v !== "object" || v === null) return null;
  const r = v as Record<string, unknown>;
  const num = (x: unknown) => (typeof x === "number" && Number.isFinite(x) ? x : null);
  if (typeof r.ts !== "string" || typeof r.lane !== "number") return null;
  return {
    ts: r.ts,
    lane: r.lane,
    throughput_bps: num(r.throughput_bps) ?? 0,
    loss_pct: num(r.loss_pct) ?? 0,
    delay_mean_ms: num(r.delay_mean_ms),
    delay_p99_ms: num(r.delay_p99_ms),
    jitter_ms: num(r.jitter_ms),
  };
}

export const WINDOW_S = 120;

export function useKpis(sliceId: number) {
  const available = useHasPath(KPI_PATH);
  const query = useQuery({
    queryKey: ["kpis", { sliceId }],
    queryFn: async () => {
      const since = new Date(Date.now() - WINDOW_S * 1000).toISOString();
      const res = await authFetch(new Request(`/api/v1/slices/${sliceId}/kpis?since=${encodeURIComponent(since)}`));
      const body: unknown = await res.json().catch(() => null);
      if (!res.ok) throw problemFrom(res.status, body);
      const rows = Array.isArray(body) ? body : (body as { data?: unknown[] } | null)?.data ?? [];
      return rows.map(asSample).filter((s): s is KpiSample => s !== null);
    },
    enabled: available === true,
    refetchInterval: 1000,
  });
  return { available, ...query };
}
