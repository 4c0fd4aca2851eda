// The live KPI stream (server-sent events at /api/v1/kpis/stream), read with fetch so the bearer
// token goes in a header (EventSource cannot send one). One stream per page, for all its slices.
import { useEffect } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { authFetch } from "../../api/client";
import { useHasPath } from "../../api/features";
import { mergeSamples, type KpiSample } from "./kpiSource";

function parseEvents(chunk: string, onKpi: (points: KpiSample[]) => void): void {
  let event = "message";
  const data: string[] = [];
  for (const line of chunk.split("\n")) {
    if (line.startsWith("event:")) event = line.slice(6).trim();
    else if (line.startsWith("data:")) data.push(line.slice(5).trimStart());
  }
  if (event !== "kpi" || data.length === 0) return;
  try {
    const parsed: unknown = JSON.parse(data.join("\n"));
    if (Array.isArray(parsed)) onKpi(parsed as KpiSample[]);
  } catch {
    // a malformed event is skipped; the 1 s poll fills any gap
  }
}

export function useKpiStream(sliceIds: number[]): void {
  const qc = useQueryClient();
  const available = useHasPath("/api/v1/kpis/stream");
  const key = [...sliceIds].sort((a, b) => a - b).join(",");

  useEffect(() => {
    if (!available || key === "") return;
    const abort = new AbortController();
    let retry: number | undefined;
    const ids = key.split(",").map(Number);

    const connect = async () => {
      try {
        const qs = ids.map((id) => `slice_id=${id}`).join("&");
        const res = await authFetch(new Request(`/api/v1/kpis/stream?${qs}`, {
          headers: { Accept: "text/event-stream" }, signal: abort.signal,
        }));
        if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
        const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
        let buffer = "";
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          buffer += value;
          let end: number;
          while ((end = buffer.indexOf("\n\n")) >= 0) {
            parseEvents(buffer.slice(0, end), (points) => {
              const bySlice = new Map<number, KpiSample[]>();
              for (const p of points) bySlice.set(p.slice_id, [...(bySlice.get(p.slice_id) ?? []), p]);
              bySlice.forEach((pts, id) => mergeSamples(qc, id, pts));
            });
            buffer = buffer.slice(end + 2);
          }
        }
      } catch {
        if (abort.signal.aborted) return;
      }
      if (!abort.signal.aborted) retry = window.setTimeout(connect, 2000);
    };
    void connect();
    return () => {
      abort.abort();
      window.clearTimeout(retry);
    };
  }, [available, key, qc]);
}
