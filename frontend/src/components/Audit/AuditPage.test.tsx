import { describe, expect, it, vi } from "vitest";
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { AuditPage } from "./AuditPage";

const ENTRY = {
  id: 1,
  ts: "2026-11-23T10:00:00Z",
  actor: "alice",
  via: "session",
  action: "update",
  object_type: "tenant",
  object_id: 3,
  tenant_id: 3,
  before: { name: "acme", vni: 100 },
  after: { name: "acme", vni: 200 },
};

describe("AuditPage", () => {
  it("reads as a timeline: who, what, which object (linked), field before → after", async () => {
    const fake = fakeApi({ "GET /api/v1/audit": () => jsonResponse({ count: 1, data: [ENTRY] }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<AuditPage />, { url: "/audit?object_type=tenant&actor=alice" });
    const entry = await screen.findByTestId("audit-entry");
    expect(entry).toHaveTextContent(/alice changed tenant acme/);
    expect(screen.getByRole("table", { name: "Audit log" })).toContainElement(entry);
    expect(screen.getByRole("columnheader", { name: /When/ })).toHaveAttribute("aria-sort", "descending");
    expect(within(entry).getByRole("link", { name: "acme" })).toHaveAttribute("href", "/tenants?q=acme");
    const rows = within(within(entry).getByRole("table", { name: "Changes to acme" })).getAllByRole("row");
    expect(rows.map((r) => r.textContent)).toEqual(["FieldBeforeAfter", "VXLAN VNI100200"]);
    expect(within(entry).getByText(/23 Nov 2026/).tagName).toBe("TIME");
    const call = fake.calls.find((c) => c.url.pathname === "/api/v1/audit");
    expect(call?.url.searchParams.get("object_type")).toBe("tenant");
    expect(call?.url.searchParams.get("actor")).toBe("alice");
    expect(call?.url.searchParams.get("limit")).toBe("50");
    expect(call?.url.searchParams.get("offset")).toBe("0");
  });

  it("pages on the server: one page of a long log, the total, the next page on demand", async () => {
    const fake = fakeApi({
      "GET /api/v1/audit": (_req, url) => {
        const offset = Number(url.searchParams.get("offset"));
        return jsonResponse({
          count: 12_345,
          data: Array.from({ length: 50 }, (_, i) => ({
            ...ENTRY,
            id: 12_345 - offset - i,
            action: "login",
            before: null,
            after: null,
          })),
        });
      },
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<AuditPage />);
    expect(await screen.findAllByTestId("audit-entry")).toHaveLength(50);
    expect(screen.getByTestId("row-count")).toHaveTextContent("12,345 rows");
    await userEvent.click(screen.getByRole("button", { name: "Page 2" }));
    await vi.waitFor(() => expect(fake.calls.at(-1)?.url.searchParams.get("offset")).toBe("50"));
    await userEvent.click(screen.getByRole("button", { name: /Who|What happened/ }));
    await vi.waitFor(() => expect(fake.calls.at(-1)?.url.searchParams.get("sort")).toBe("actor"));
  });

  it("shows a structured change as formatted JSON", async () => {
    const sla = { delay_p99_ms: 20, loss_pct: 0.1, lanes: [{ lane: 1, min_mbps: 10 }] };
    const fake = fakeApi({
      "GET /api/v1/audit": () =>
        jsonResponse({
          count: 1,
          data: [{ ...ENTRY, object_type: "slice", before: { name: "gold", sla: null }, after: { name: "gold", sla } }],
        }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<AuditPage />);
    const changes = await screen.findByRole("table", { name: "Changes to gold" });
    const block = within(changes).getByText(
      (_t, el) => el?.tagName === "PRE" && (el.textContent ?? "").includes('"min_mbps": 10'),
    );
    expect(block.textContent).toBe(JSON.stringify(sla, null, 2));
  });
});
