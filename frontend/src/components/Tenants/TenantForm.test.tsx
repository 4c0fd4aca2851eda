import { describe, expect, it, vi } from "vitest";
import { screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, problemResponse, renderWithApp } from "../../test/render";
import { TenantForm } from "./TenantForm";

const TENANT = {
  id: 5,
  name: "acme",
  vni: 100,
  vlan: 10,
  ue_pool: "10.47.0.0/16",
  contact: "",
  description: "",
  version: 1,
  created_at: "2026-11-23T09:00:00Z",
  updated_at: "2026-11-23T09:00:00Z",
};

describe("TenantForm", () => {
  it("keeps an out-of-range VLAN as typed, says so, and does not call the API", async () => {
    const api = fakeApi({});
    vi.stubGlobal("fetch", api.fetch);
    renderWithApp(<TenantForm onDone={() => undefined} />);
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: /name/i }), "acme");
    await user.type(screen.getByRole("textbox", { name: /vxlan vni/i }), "100");
    const vlan = screen.getByRole("textbox", { name: /vlan id/i });
    await user.type(vlan, "5000");
    await user.tab(); // Mantine's default would clamp to 4094 on blur
    expect(vlan).toHaveValue("5000");
    expect(screen.getByText("VLAN ID must be between 1 and 4094; 5000 is out of range.")).toBeInTheDocument();
    await user.click(screen.getByRole("button", { name: "Create tenant" }));
    expect(api.calls).toHaveLength(0);
  });

  it("refuses a blank name before asking the API", async () => {
    const api = fakeApi({});
    vi.stubGlobal("fetch", api.fetch);
    renderWithApp(<TenantForm onDone={() => undefined} />);
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: /name/i }), "   ");
    await user.type(screen.getByRole("textbox", { name: /vxlan vni/i }), "7");
    await user.click(screen.getByRole("button", { name: "Create tenant" }));
    expect(screen.getByText("Name cannot be blank.")).toBeInTheDocument();
    expect(api.calls).toHaveLength(0);
  });

  it("shows the API's conflict on the VNI field in words, not database text", async () => {
    const api = fakeApi({
      "POST /api/v1/tenants": () =>
        problemResponse(409, "Conflict", "Key (vni)=(100) already exists.", [
          { field: "vni", message: "Key (vni)=(100) already exists." },
        ]),
    });
    vi.stubGlobal("fetch", api.fetch);
    const done = vi.fn();
    renderWithApp(<TenantForm onDone={done} />);
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: /name/i }), "acme");
    await user.type(screen.getByRole("textbox", { name: /vxlan vni/i }), "100");
    await user.click(screen.getByRole("button", { name: "Create tenant" }));
    const vni = screen.getByRole("textbox", { name: /vxlan vni/i });
    await waitFor(() => expect(vni).toHaveAccessibleDescription(/VXLAN VNI 100 is already in use; choose another\./));
    expect(screen.getByRole("alert")).toHaveTextContent("Correct the highlighted field below.");
    expect(document.body).not.toHaveTextContent("Key (vni)");
    expect(done).not.toHaveBeenCalled();
    expect(JSON.parse(api.calls[0]?.body ?? "{}")).toMatchObject({ name: "acme", vni: 100, vlan: null });
  });

  it("sends the version when editing and closes on success", async () => {
    const api = fakeApi({ "PATCH /api/v1/tenants/5": () => jsonResponse({ ...TENANT, name: "acme2", version: 2 }) });
    vi.stubGlobal("fetch", api.fetch);
    const done = vi.fn();
    renderWithApp(<TenantForm tenant={TENANT} onDone={done} />);
    const user = userEvent.setup();
    const name = screen.getByRole("textbox", { name: /name/i });
    await user.clear(name);
    await user.type(name, "acme2");
    await user.click(screen.getByRole("button", { name: "Save" }));
    await waitFor(() => expect(done).toHaveBeenCalled());
    expect(JSON.parse(api.calls[0]?.body ?? "{}")).toMatchObject({ name: "acme2", vni: 100, vlan: 10, version: 1 });
  });
});
