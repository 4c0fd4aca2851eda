// KPI samples of one slice. The live range (5 min) comes from the API once, then from the live
// stream (kpiStream.ts) merged in as points arrive, with a slow poll to fill gaps; the long
// ranges (1 h, 24 h) are binned by the API from the stored samples and polled slowly.
import { useQuery, type QueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";

export type KpiSample = Schemas["KpiSamplePublic"];

export type RangeKey = "5m" | "1h" | "24h";
export const RANGES: Record<RangeKey, { label: string; seconds: number; step?: number; poll: number }> = {
  "5m": { label: "5 min", seconds: 300, poll: 5000 },
  "1h": { label: "1 h", seconds: 3600, step: 10, poll: 10_000 },
  "24h": { label: "24 h", seconds: 86_400, step: 300, poll: 60_000 },
};
export const LIVE_WINDOW_S = RANGES["5m"].seconds;

export const kpiKey = (sliceId: number) => ["kpis", { sliceId }] as const;
const rangeKey = (sliceId: number, range: RangeKey, backendId: number | null) =>
  ["kpis", { sliceId, range, backendId }] as const;

/** Merge new points into a slice's live window: one sample per (backend, lane, ts), oldest dropped. */
export function mergeSamples(qc: QueryClient, sliceId: number, points: KpiSample[]): void {
  qc.setQueryData<KpiSample[]>(kpiKey(sliceId), (old) => {
    if (!old) return old; // nothing fetched yet: the first fetch brings the window
    const key = (s: KpiSample) => `${s.backend_id}|${s.lane}|${s.ts}`;
    const byKey = new Map(old.map((s) => [key(s), s]));
    for (const p of points) byKey.set(key(p), p);
    const cutoff = Date.now() - LIVE_WINDOW_S * 1000;
    return [...byKey.values()].filter((s) => Date.parse(s.ts) >= cutoff).sort((a, b) => a.ts.localeCompare(b.ts));
  });
}

/** The slice's samples over ``range``: every backend's for the live range, ``backendId``'s for the long ones. */
export function useKpis(sliceId: number, range: RangeKey = "5m", backendId: number | null = null) {
  const live = range === "5m";
  const spec = RANGES[range];
  const query = useQuery({
    queryKey: live ? kpiKey(sliceId) : rangeKey(sliceId, range, backendId),
    queryFn: () => {
      const since = new Date(Date.now() - spec.seconds * 1000).toISOString();
      const query = {
        since,
        ...(spec.step ? { step_s: spec.step } : {}),
        ...(!live && backendId != null ? { backend_id: backendId } : {}),
      };
      return unwrap(api.GET("/api/v1/slices/{slice_id}/kpis", { params: { path: { slice_id: sliceId }, query } }));
    },
    refetchInterval: spec.poll,
  });
  return query;
}
