import { describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { actionWords, matchWords, SliceIntents } from "./SliceIntents";

const INTENT = {
  id: 9,
  tenant_id: 1,
  slice_id: 5,
  owner: "integrator",
  created_at: "2026-11-23T09:00:00Z",
  version: 1,
  source_format: "listing1",
  source: {},
  match: {
    imsis: ["001010000000007"],
    ue_prefixes: [],
    teids: [],
    dst_ports: [[5000, 5007]],
    dscp: [],
    protocol: "any",
  },
  action: { type: "prioritise", lane: 6, rr_path: null, rate_mbps: null },
};

describe("SliceIntents", () => {
  it("says what an intent matches and does in words", () => {
    expect(matchWords(INTENT.match as never)).toBe("IMSI 001010000000007; ports 5000–5007");
    expect(
      matchWords({ imsis: [], ue_prefixes: [], teids: [], dst_ports: [], dscp: [46], protocol: "any" } as never),
    ).toBe("DSCP 46");
    expect(actionWords({ type: "steer", rr_path: 2, lane: null, rate_mbps: null } as never)).toBe("steer to RR path 2");
    expect(actionWords({ type: "rate_limit", rate_mbps: 5, lane: null, rr_path: null } as never)).toBe(
      "rate limit 5 Mbit/s",
    );
  });

  it("lists the slice's intents and deletes one after a confirmation naming it and the redeploy", async () => {
    const fake = fakeApi({
      "GET /api/v1/intents": () => jsonResponse({ count: 1, data: [INTENT] }),
      "DELETE /api/v1/intents/9": () =>
        jsonResponse({ operation: "delete", intents: [INTENT], deployments: [], refused: [] }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<SliceIntents sliceId={5} sliceName="red-embb" canDelete />);
    const table = await screen.findByRole("table", { name: "Intents" });
    expect(table).toHaveTextContent("prioritise to lane 6");
    expect(table).toHaveTextContent("Listing 1");
    expect(fake.calls[0]?.url.searchParams.get("slice_id")).toBe("5");
    const user = userEvent.setup();
    await user.click(within(table).getByRole("button", { name: "Delete intent 9" }));
    const dialog = await screen.findByRole("dialog", { name: "Delete intent 9 of slice red-embb?" });
    expect(dialog).toHaveTextContent("backends of red-embb are redeployed at once");
    expect(fake.calls.some((c) => c.method === "DELETE")).toBe(false);
    await user.click(within(dialog).getByRole("button", { name: "Delete intent 9" }));
    await waitFor(() => expect(fake.calls.some((c) => c.method === "DELETE")).toBe(true));
  });

  it("offers no delete to a reader", async () => {
    vi.stubGlobal("fetch", fakeApi({ "GET /api/v1/intents": () => jsonResponse({ count: 1, data: [INTENT] }) }).fetch);
    renderWithApp(<SliceIntents sliceId={5} sliceName="red-embb" canDelete={false} />);
    await screen.findByRole("table", { name: "Intents" });
    expect(screen.queryByRole("button", { name: /Delete/ })).toBeNull();
  });
});
