import { describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { ApiKeysPage } from "./ApiKeysPage";

const KEY = {
  id: 4,
  name: "ci-pipeline",
  prefix: "sp_ab12",
  scopes: ["read"],
  created_at: "2026-11-23T09:00:00Z",
  last_used_at: null,
  revoked_at: null,
  expires_at: null,
  user_id: 1,
};

describe("ApiKeysPage", () => {
  it("revokes a key only after a confirmation naming it, with times in the shared format", async () => {
    const fake = fakeApi({
      "GET /api/v1/api-keys": () => jsonResponse([KEY]),
      "DELETE /api/v1/api-keys/4": () => new Response(null, { status: 204 }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<ApiKeysPage />);
    const table = await screen.findByRole("table", { name: "API keys" });
    const created = await within(table).findByText(/23 Nov 2026/);
    expect(created.closest("time")).toHaveAttribute("datetime", "2026-11-23T09:00:00.000Z");
    const user = userEvent.setup();
    await user.click(within(table).getByRole("button", { name: "Revoke ci-pipeline" }));
    const dialog = await screen.findByRole("dialog", { name: "Revoke API key “ci-pipeline”?" });
    expect(dialog).toHaveTextContent("sp_ab12… is refused from now on");
    expect(fake.calls.some((c) => c.method === "DELETE")).toBe(false);
    await user.click(within(dialog).getByRole("button", { name: "Revoke key" }));
    await waitFor(() => expect(fake.calls.some((c) => c.method === "DELETE")).toBe(true));
  });
});
