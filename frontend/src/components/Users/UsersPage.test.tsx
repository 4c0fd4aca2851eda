import { afterEach, describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { setTokens } from "../../api/client";
import { userMe } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderSignedIn } from "../../test/render";
import { UsersPage } from "./UsersPage";

const OP = userMe({ full_name: "Op" });
const RED = userMe({ id: 2, username: "red-noc", role: "tenant", tenant_id: 3, version: 4 });

function api(extra: Parameters<typeof fakeApi>[0] = {}) {
  return fakeApi({
    "GET /api/v1/users/me": () => jsonResponse(OP),
    "GET /api/v1/users": () => jsonResponse({ count: 2, data: [OP, RED] }),
    "GET /api/v1/tenants": () => jsonResponse({ count: 1, data: [{ id: 3, name: "mvno-red" }] }),
    ...extra,
  });
}

afterEach(() => setTokens(null));

describe("UsersPage", () => {
  it("lists users with tenant names and never offers to disable yourself", async () => {
    vi.stubGlobal("fetch", api().fetch);
    renderSignedIn(<UsersPage />, { url: "/users" });
    expect(await screen.findByRole("cell", { name: "mvno-red" })).toBeInTheDocument();
    expect(await screen.findByRole("button", { name: "Disable user red-noc" })).toBeInTheDocument();
    expect(screen.queryByRole("button", { name: "Disable user op" })).toBeNull();
  });

  it("disables only after a confirmation naming the user, sending the version read", async () => {
    const fake = api({ "PATCH /api/v1/users/2": () => jsonResponse({ ...RED, is_active: false, version: 5 }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderSignedIn(<UsersPage />, { url: "/users" });
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Disable user red-noc" }));
    const dialog = await screen.findByRole("dialog", { name: "Disable user red-noc?" });
    expect(dialog).toHaveTextContent("red-noc (tenant, mvno-red) can no longer log in.");
    await user.click(within(dialog).getByRole("button", { name: "Disable user" }));
    await waitFor(() => expect(fake.calls.some((c) => c.method === "PATCH")).toBe(true));
    expect(JSON.parse(fake.calls.find((c) => c.method === "PATCH")?.body ?? "{}")).toEqual({
      is_active: false,
      version: 4,
    });
  });

  it("a new tenant user must name its tenant and a password of 10+ characters", async () => {
    const fake = api();
    vi.stubGlobal("fetch", fake.fetch);
    renderSignedIn(<UsersPage />, { url: "/users" });
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "New user" }));
    const dialog = await screen.findByRole("dialog", { name: "New user" });
    await user.type(within(dialog).getByRole("textbox", { name: /username/i }), "blue-noc");
    await user.type(within(dialog).getByLabelText(/^Password/), "short");
    await user.click(within(dialog).getByRole("button", { name: "Create user" }));
    expect(within(dialog).getByText("A tenant user belongs to a tenant: choose it.")).toBeInTheDocument();
    expect(within(dialog).getByText("At least 10 characters.", { selector: "[id$=-error]" })).toBeInTheDocument();
    expect(fake.calls.some((c) => c.method === "POST")).toBe(false);
  });
});
