// The live KPI stream (server-sent events at /api/v1/kpis/stream), read with fetch so the bearer
// token goes in a header (EventSource cannot send one). One stream per page, for all its slices.
import { useEffect } from "react";
import { useQueryClient } from "@tanstack/react-query";
import { EventSourceParserStream } from "eventsource-parser/stream";
import { authFetch } from "../../api/client";
import { mergeSamples, type KpiSample } from "./kpiSource";

function parsePoints(data: string): KpiSample[] {
  try {
    const parsed: unknown = JSON.parse(data);
    return Array.isArray(parsed) ? (parsed as KpiSample[]) : [];
  } catch {
    return []; // a malformed event is skipped; the 1 s poll fills any gap
  }
}

export function useKpiStream(sliceIds: number[]): void {
  const qc = useQueryClient();
  const key = [...sliceIds].sort((a, b) => a - b).join(",");

  useEffect(() => {
    if (key === "") return;
    const abort = new AbortController();
    let retry: number | undefined;
    let retryMs = 2000; // until the server says otherwise (its "retry:" field)
    const ids = key.split(",").map(Number);

    const connect = async () => {
      try {
        const qs = ids.map((id) => `slice_id=${id}`).join("&");
        const res = await authFetch(
          new Request(`/api/v1/kpis/stream?${qs}`, {
            headers: { Accept: "text/event-stream" },
            signal: abort.signal,
          }),
        );
        if (!res.ok || !res.body) throw new Error(`stream: HTTP ${res.status}`);
        // framing (multi-line data, comments, keep-alive pings) is the parser's, per the SSE spec
        const events = res.body.pipeThrough(new TextDecoderStream()).pipeThrough(
          new EventSourceParserStream({
            onRetry: (ms) => {
              retryMs = ms;
            },
          }),
        );
        const reader = events.getReader();
        for (;;) {
          const { value, done } = await reader.read();
          if (done) break;
          if (value.event !== "kpi") continue;
          const bySlice = new Map<number, KpiSample[]>();
          for (const p of parsePoints(value.data)) bySlice.set(p.slice_id, [...(bySlice.get(p.slice_id) ?? []), p]);
          bySlice.forEach((pts, id) => mergeSamples(qc, id, pts));
        }
      } catch {
        if (abort.signal.aborted) return;
      }
      if (!abort.signal.aborted) retry = window.setTimeout(connect, retryMs);
    };
    void connect();
    return () => {
      abort.abort();
      window.clearTimeout(retry);
    };
  }, [key, qc]);
}
