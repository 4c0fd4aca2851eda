import { describe, expect, it, vi } from "vitest";
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { SlaHistory } from "./SlaHistory";

const T0 = Date.parse("2026-11-27T10:00:00Z");
const at = (s: number) => new Date(T0 + s * 1000).toISOString();
const violation = (id: number, lane: number, startS: number, worst = 31.5) => ({
  id,
  slice_id: 7,
  backend_id: 1,
  backend_name: "bmv2-lab",
  lane,
  metric: "delay_p99_ms",
  threshold: 20,
  worst,
  started_at: at(startS),
  ended_at: at(startS + 6),
  detail: { direction: "above" },
});

// 40 violations of lane 2 flapping every 6 s for 4 minutes, and one on each of 25 other lanes
const FLAPPING = Array.from({ length: 40 }, (_, i) => violation(i + 1, 2, i * 6, i === 17 ? 44 : 31.5));
const OTHERS = Array.from({ length: 25 }, (_, i) => violation(100 + i, 10 + i, 300 + i * 10));
const ALL = [...FLAPPING, ...OTHERS].sort((a, b) => b.started_at.localeCompare(a.started_at));

describe("SLA history", () => {
  it("groups a flapping check into one episode, pages the episodes, metrics in words", async () => {
    const fake = fakeApi({
      "GET /api/v1/openapi.json": () => jsonResponse({ paths: { "/api/v1/slices/{slice_id}/sla": {} } }),
      "GET /api/v1/slices/7/sla": () => jsonResponse({ backends: [] }),
      "GET /api/v1/violations": (_req, url) => {
        const offset = Number(url.searchParams.get("offset"));
        const limit = Number(url.searchParams.get("limit"));
        return jsonResponse({ count: ALL.length, data: ALL.slice(offset, offset + limit) });
      },
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<SlaHistory sliceId={7} backendNames={new Map()} />);
    const table = await screen.findByRole("table", { name: "SLA history" });
    expect(await within(table).findAllByText("p99 delay")).toHaveLength(20);
    expect(screen.getByTestId("episode-summary")).toHaveTextContent("65 violations in 26 episodes");
    expect(screen.getByTestId("row-count")).toHaveTextContent("26 rows");
    await userEvent.click(screen.getByRole("button", { name: "Page 2" }));
    await vi.waitFor(() => expect(within(table).getAllByRole("row")).toHaveLength(1 + 6));
    // the oldest episode is the flapping lane: its 40 violations, its 4-minute span, its worst value
    const flapping = within(table).getAllByRole("row").at(-1);
    expect(flapping).toHaveTextContent("44 ms");
    expect(flapping).toHaveTextContent("4 min (40×)");
    const calls = fake.calls.filter((c) => c.url.pathname === "/api/v1/violations");
    expect(calls[0]?.url.searchParams.get("limit")).toBe("500");
  });
});
