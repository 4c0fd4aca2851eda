import { describe, expect, it, vi } from "vitest";
import { screen, within } from "@testing-library/react";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { AuditPage } from "./AuditPage";

const ENTRY = {
  id: 1, ts: "2026-11-23T10:00:00Z", actor: "alice", via: "session", action: "update", object_type: "tenant",
  object_id: 3, tenant_id: 3, before: { name: "acme", vni: 100 }, after: { name: "acme", vni: 200 },
};

describe("AuditPage", () => {
  it("reads as a timeline: who, what, which object (linked), field before → after", async () => {
    const fake = fakeApi({ "GET /api/v1/audit": () => jsonResponse({ count: 1, data: [ENTRY] }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<AuditPage />, { url: "/audit?object_type=tenant&actor=alice" });
    const entry = await screen.findByTestId("audit-entry");
    expect(entry).toHaveTextContent(/^alice changed tenant acme/);
    expect(within(entry).getByRole("link", { name: "acme" })).toHaveAttribute("href", "/tenants?q=acme");
    const rows = within(within(entry).getByRole("table", { name: "Changes to acme" })).getAllByRole("row");
    expect(rows.map((r) => r.textContent)).toEqual(["FieldBeforeAfter", "VXLAN VNI100200"]);
    expect(within(entry).getByText(/23 Nov 2026/).tagName).toBe("TIME");
    const call = fake.calls.find((c) => c.url.pathname === "/api/v1/audit");
    expect(call?.url.searchParams.get("object_type")).toBe("tenant");
    expect(call?.url.searchParams.get("actor")).toBe("alice");
  });
});
