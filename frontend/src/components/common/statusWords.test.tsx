import { describe, expect, it, vi } from "vitest";
import { screen } from "@testing-library/react";
import { backendRow } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { BackendsPage } from "../Backends/BackendsPage";
import { OverviewPage } from "../Overview/OverviewPage";
import { BackendBadges, StateBadge } from "../Slices/StateBadge";
import { statusWord } from "./statusWords";

const backend = (id: number, name: string, health: string) => backendRow({ id, name, health, link_bps: 1e9 });

describe("status words", () => {
  it("has one word and colour per state, whatever the view", () => {
    expect(statusWord("slice", "out_of_sync")).toEqual({ label: "out of sync", color: "orange" });
    expect(statusWord("sla", "no_data")).toEqual({ label: "no data", color: "gray" });
    expect(statusWord("health", "unreachable")).toEqual(statusWord("health", "down"));
    expect(statusWord("health", "unknown").label).toBe("not probed yet");
    // a state this build does not know yet: its own words, in grey, never blank
    expect(statusWord("slice", "half_done")).toEqual({ label: "half done", color: "gray" });
    expect(statusWord("sla", null).label).toBe("unknown");
  });

  it("the slice badges say the same words as the state filter and the overview cards", () => {
    renderWithApp(
      <>
        <StateBadge state="not_deployed" />
        <BackendBadges
          status={[
            {
              backend_id: 1,
              backend_name: "bmv2-lab",
              state: "deployed",
              sla: "degraded",
              rule_set_number: 3,
            } as never,
          ]}
        />
      </>,
    );
    expect(screen.getByText("not deployed").closest("[data-state]")).toHaveAttribute("data-state", "not_deployed");
    expect(screen.getByTestId("backend-state-1")).toHaveTextContent("bmv2-lab: deployed · degraded");
  });

  it("the overview and the backends page show a backend's health in the same word", async () => {
    const fake = fakeApi({
      "GET /api/v1/backends": () =>
        jsonResponse({
          count: 3,
          data: [
            backend(1, "bmv2-lab", "ok"),
            backend(2, "netfpga-sim", "unreachable"),
            backend(3, "xdp-new", "unknown"),
          ],
        }),
      "GET /api/v1/slices": () => jsonResponse({ count: 0, data: [] }),
      "GET /api/v1/slices/states": () => jsonResponse([]),
      "GET /api/v1/violations": () => jsonResponse({ count: 0, data: [] }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    const words = async () =>
      Promise.all([1, 2, 3].map(async (id) => (await screen.findByTestId(`health-${id}`)).textContent));
    const overview = renderWithApp(<OverviewPage />);
    const onOverview = await words();
    overview.unmount();
    renderWithApp(<BackendsPage />);
    expect(await words()).toEqual(onOverview);
    expect(onOverview).toEqual(["ok", "down", "not probed yet"]);
  });
});
