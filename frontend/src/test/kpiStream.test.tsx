// The KPI stream client as it is (kpiStream.ts): it reads SSE over fetch with the bearer token,
// merges "kpi" events into each slice's cached window, skips other and malformed events, and
// reconnects when the stream ends.
import { afterEach, describe, expect, it, vi } from "vitest";
import { waitFor } from "@testing-library/react";
import { setTokens } from "../api/client";
import { fakeApi, jsonResponse, renderWithApp } from "./render";
import { kpiKey, type KpiSample } from "../components/Kpis/kpiSource";
import { useKpiStream } from "../components/Kpis/kpiStream";

function sample(sliceId: number, lane: number, secondsAgo: number, throughput: number): KpiSample {
  return {
    slice_id: sliceId,
    backend_id: 1,
    lane,
    source: "testbed",
    ts: new Date(Date.now() - secondsAgo * 1000).toISOString(),
    throughput_bps: throughput,
    interval_s: 1,
    rx_bytes: 0,
    rx_packets: 0,
    tx_bytes: 0,
    tx_packets: 0,
    loss_pct: 0,
    ecn_marks: 0,
    drops: {},
    delay_mean_ms: null,
    delay_p50_ms: null,
    delay_p99_ms: null,
    jitter_ms: null,
  };
}

/** A text/event-stream body delivered in the given chunks (split anywhere, as a network would). */
function sse(chunks: string[]): Response {
  const enc = new TextEncoder();
  const body = new ReadableStream<Uint8Array>({
    start(controller) {
      for (const c of chunks) controller.enqueue(enc.encode(c));
      controller.close();
    },
  });
  return new Response(body, { headers: { "Content-Type": "text/event-stream" } });
}

function Streamer({ ids }: { ids: number[] }) {
  useKpiStream(ids);
  return null;
}

afterEach(() => setTokens(null));

describe("useKpiStream", () => {
  it("merges kpi events into the right slice's window, skipping other and malformed events", async () => {
    const old = sample(1, 0, 10, 5);
    const fresh1 = sample(1, 0, 1, 42);
    const fresh2 = sample(2, 3, 1, 7);
    const event = `event: kpi\ndata: ${JSON.stringify([fresh1, fresh2])}\n\n`;
    const api = fakeApi({
      "GET /api/v1/openapi.json": () => jsonResponse({ paths: { "/api/v1/kpis/stream": {} } }),
      "GET /api/v1/kpis/stream": () =>
        sse([
          ": keep-alive\n\n",
          "event: heartbeat\ndata: {}\n\n",
          "event: kpi\ndata: {not json\n\n",
          event.slice(0, 25),
          event.slice(25), // one event split across two reads
        ]),
    });
    vi.stubGlobal("fetch", api.fetch);
    setTokens({ access_token: "tok", refresh_token: "r" });
    const { client } = renderWithApp(<Streamer ids={[2, 1]} />);
    client.setQueryData(kpiKey(1), [old]);
    client.setQueryData(kpiKey(2), []);

    await waitFor(() => expect(client.getQueryData<KpiSample[]>(kpiKey(1))).toHaveLength(2));
    expect(client.getQueryData<KpiSample[]>(kpiKey(1))?.map((s) => s.throughput_bps)).toEqual([5, 42]);
    expect(client.getQueryData<KpiSample[]>(kpiKey(2))).toEqual([fresh2]);

    const stream = api.calls.find((c) => c.url.pathname === "/api/v1/kpis/stream");
    expect(stream?.url.search).toBe("?slice_id=1&slice_id=2"); // sorted: one stream per set of slices
  });

  it("does not create a window for a slice that has not been fetched yet", async () => {
    const api = fakeApi({
      "GET /api/v1/openapi.json": () => jsonResponse({ paths: { "/api/v1/kpis/stream": {} } }),
      "GET /api/v1/kpis/stream": () => sse([`event: kpi\ndata: ${JSON.stringify([sample(9, 0, 1, 1)])}\n\n`]),
    });
    vi.stubGlobal("fetch", api.fetch);
    const { client } = renderWithApp(<Streamer ids={[9]} />);
    await waitFor(() => expect(api.calls.some((c) => c.url.pathname === "/api/v1/kpis/stream")).toBe(true));
    expect(client.getQueryData(kpiKey(9))).toBeUndefined();
  });

  it("reconnects after the stream ends", async () => {
    vi.useFakeTimers({ shouldAdvanceTime: true });
    try {
      const api = fakeApi({
        "GET /api/v1/openapi.json": () => jsonResponse({ paths: { "/api/v1/kpis/stream": {} } }),
        "GET /api/v1/kpis/stream": () => sse([]),
      });
      vi.stubGlobal("fetch", api.fetch);
      renderWithApp(<Streamer ids={[1]} />);
      const streams = () => api.calls.filter((c) => c.url.pathname === "/api/v1/kpis/stream").length;
      await waitFor(() => expect(streams()).toBe(1));
      await vi.advanceTimersByTimeAsync(2100);
      await waitFor(() => expect(streams()).toBe(2));
    } finally {
      vi.useRealTimers();
    }
  });
});
