import { describe, expect, it, vi } from "vitest";
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { SlaHistory } from "./SlaHistory";

const violation = (id: number) => ({
  id, slice_id: 7, backend_id: 1, backend_name: "bmv2-lab", lane: 2, metric: "delay_p99_ms", threshold: 20, worst: 31.5,
  started_at: "2026-11-27T10:00:00Z", ended_at: "2026-11-27T10:00:09Z", detail: {},
});

describe("SLA history", () => {
  it("is paged on the server, 20 violations a page, newest first, metrics in words", async () => {
    const fake = fakeApi({
      "GET /api/v1/openapi.json": () => jsonResponse({ paths: { "/api/v1/slices/{slice_id}/sla": {} } }),
      "GET /api/v1/slices/7/sla": () => jsonResponse({ backends: [] }),
      "GET /api/v1/violations": (_req, url) => {
        const offset = Number(url.searchParams.get("offset"));
        return jsonResponse({ count: 45, data: Array.from({ length: 20 }, (_, i) => violation(offset + i + 1)) });
      },
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<SlaHistory sliceId={7} backendNames={new Map()} />);
    const table = await screen.findByRole("table", { name: "SLA history" });
    expect(await within(table).findAllByText("p99 delay")).toHaveLength(20);
    const calls = () => fake.calls.filter((c) => c.url.pathname === "/api/v1/violations");
    expect(calls()[0]?.url.searchParams.get("limit")).toBe("20");
    expect(calls()[0]?.url.searchParams.get("sort")).toBe("-started_at");
    expect(screen.getByTestId("row-count")).toHaveTextContent("45 rows");
    await userEvent.click(screen.getByRole("button", { name: "Page 3" }));
    await vi.waitFor(() => expect(calls().at(-1)?.url.searchParams.get("offset")).toBe("40"));
  });
});
