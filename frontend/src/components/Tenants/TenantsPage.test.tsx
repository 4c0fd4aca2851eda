import { describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, problemResponse, renderWithApp } from "../../test/render";
import { TenantsPage } from "./TenantsPage";

const ACME = {
  id: 3,
  name: "acme",
  vni: 100,
  vlan: null,
  ue_pool: null,
  contact: "",
  description: "",
  version: 1,
  created_at: "2026-11-23T09:00:00Z",
  updated_at: "2026-11-23T09:00:00Z",
};

describe("TenantsPage delete", () => {
  it("asks first, and when the API refuses shows its reason in words and keeps the tenant", async () => {
    const fake = fakeApi({
      "GET /api/v1/tenants": () => jsonResponse({ count: 1, data: [ACME] }),
      "DELETE /api/v1/tenants/3": () =>
        problemResponse(409, "Conflict", 'Key (id)=(3) is still referenced from table "slice".', [
          { field: "tenant_id", message: 'Key (id)=(3) is still referenced from table "slice".' },
        ]),
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<TenantsPage />, { url: "/tenants" });
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Delete tenant acme" }));
    const dialog = await screen.findByRole("dialog", { name: "Delete tenant acme?" });
    await user.click(within(dialog).getByRole("button", { name: "Delete tenant" }));
    await waitFor(() =>
      expect(within(dialog).getByRole("alert")).toHaveTextContent(
        "Tenant: Still in use by at least one slice; remove that first.",
      ),
    );
    expect(dialog).not.toHaveTextContent("Key (id)");
    expect(screen.getByRole("cell", { name: "acme" })).toBeInTheDocument();
  });
});
