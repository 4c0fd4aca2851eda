// KPI samples of one slice: the last WINDOW_S seconds from the API, polled every second, with
// points from the live stream (kpiStream.ts) merged in as they arrive.
import { useQuery, type QueryClient } from "@tanstack/react-query";
import { api, unwrap, type Schemas } from "../../api/client";
import { useHasPath } from "../../api/features";

export type KpiSample = Schemas["KpiSamplePublic"];
export const KPI_PATH = "/api/v1/slices/{slice_id}/kpis";
export const WINDOW_S = 120;

export const kpiKey = (sliceId: number) => ["kpis", { sliceId }] as const;

/** Merge new points into a slice's cached window: one sample per (lane, ts), oldest dropped. */
export function mergeSamples(qc: QueryClient, sliceId: number, points: KpiSample[]): void {
  qc.setQueryData<KpiSample[]>(kpiKey(sliceId), (old) => {
    if (!old) return old; // nothing fetched yet: the first poll brings the window
    const byKey = new Map(old.map((s) => [`${s.lane}|${s.ts}`, s]));
    for (const p of points) byKey.set(`${p.lane}|${p.ts}`, p);
    const cutoff = Date.now() - WINDOW_S * 1000;
    return [...byKey.values()].filter((s) => Date.parse(s.ts) >= cutoff).sort((a, b) => a.ts.localeCompare(b.ts));
  });
}

export function useKpis(sliceId: number) {
  const available = useHasPath(KPI_PATH);
  const query = useQuery({
    queryKey: kpiKey(sliceId),
    queryFn: () => {
      const since = new Date(Date.now() - WINDOW_S * 1000).toISOString();
      return unwrap(api.GET("/api/v1/slices/{slice_id}/kpis", { params: { path: { slice_id: sliceId }, query: { since } } }));
    },
    enabled: available === true,
    refetchInterval: 1000,
  });
  return { available, ...query };
}
