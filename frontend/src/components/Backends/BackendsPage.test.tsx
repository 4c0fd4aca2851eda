import { describe, expect, it, vi } from "vitest";
import { screen, within } from "@testing-library/react";
import { backendRow } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { BackendsPage } from "./BackendsPage";

const backend = (id: number, name: string, link_bps: number, port_bps: Record<string, number>) =>
  backendRow({ id, name, link_bps, port_bps });

describe("BackendsPage", () => {
  it("lists each backend's link capacity and how many ports have one (what admission control checks)", async () => {
    vi.stubGlobal(
      "fetch",
      fakeApi({
        "GET /api/v1/backends": () =>
          jsonResponse({
            count: 2,
            data: [backend(1, "edge-1", 100e6, { "3": 50e6, "1": 100e6 }), backend(2, "core", 10e9, {})],
          }),
        "GET /api/v1/slices": () => jsonResponse({ count: 0, data: [] }),
      }).fetch,
    );
    renderWithApp(<BackendsPage />);
    const edge = (await screen.findByRole("link", { name: "edge-1" })).closest("tr");
    expect(edge).not.toBeNull();
    expect(within(edge as HTMLElement).getByText("100 Mbit/s · 2 ports")).toBeInTheDocument();
    const core = screen.getByRole("link", { name: "core" }).closest("tr");
    expect(within(core as HTMLElement).getByText("10000 Mbit/s")).toBeInTheDocument();
  });
});
