import { afterEach, describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { setTokens } from "../../api/client";
import { subscriberRow, userMe } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderSignedIn } from "../../test/render";
import { parseTeids } from "./SubscriberForm";
import { SubscribersPage } from "./SubscribersPage";

const SUB = subscriberRow();

function api(extra: Parameters<typeof fakeApi>[0] = {}) {
  return fakeApi({
    "GET /api/v1/subscribers": () => jsonResponse({ count: 1, data: [SUB] }),
    "GET /api/v1/tenants": () => jsonResponse({ count: 1, data: [{ id: 3, name: "acme" }] }),
    "GET /api/v1/slices": () => jsonResponse({ count: 1, data: [{ id: 21, name: "video", tenant_id: 3 }] }),
    "GET /api/v1/users/me": () => jsonResponse(userMe()),
    ...extra,
  });
}

/** The page as the app mounts it: inside the signed-in session (the import offers operators an override). */
function renderPage(url: string) {
  renderSignedIn(<SubscribersPage />, { url });
}

afterEach(() => setTokens(null));

describe("SubscribersPage", () => {
  it("shows tenant and slice names with links instead of ids", async () => {
    vi.stubGlobal("fetch", api().fetch);
    renderPage("/subscribers");
    const tenant = await screen.findByRole("link", { name: "acme" });
    expect(tenant).toHaveAttribute("href", "/subscribers?tenant_id=3");
    expect(await screen.findByRole("link", { name: "video" })).toHaveAttribute("href", "/slices/21");
  });

  it("shows each subscriber's own guaranteed rate in Mbit/s, and a dash for none", async () => {
    vi.stubGlobal(
      "fetch",
      api({
        "GET /api/v1/subscribers": () =>
          jsonResponse({
            count: 2,
            data: [
              { ...SUB, guaranteed_bps: 12_500_000 },
              { ...SUB, id: 12, imsi: "001010000000002", guaranteed_bps: null },
            ],
          }),
      }).fetch,
    );
    renderPage("/subscribers");
    const table = await screen.findByRole("table", { name: "Subscribers", busy: false });
    expect(within(table).getByRole("columnheader", { name: "Guaranteed rate" })).toBeInTheDocument();
    const rows = within(table).getAllByRole("row").slice(1);
    expect(rows[0]).toHaveTextContent("12.5 Mbit/s");
    expect(rows[1]).toHaveTextContent("—");
  });

  it("passes the tenant filter from the URL to the API", async () => {
    const fake = api();
    vi.stubGlobal("fetch", fake.fetch);
    renderPage("/subscribers?tenant_id=3");
    await screen.findByRole("link", { name: "acme" });
    const call = fake.calls.find((c) => c.url.pathname === "/api/v1/subscribers");
    expect(call?.url.searchParams.get("tenant_id")).toBe("3");
  });

  it("deletes only after a confirmation that names the subscriber", async () => {
    const fake = api({ "DELETE /api/v1/subscribers/11": () => new Response(null, { status: 204 }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderPage("/subscribers");
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Delete subscriber 001010000000001" }));
    const dialog = await screen.findByRole("dialog", { name: "Delete subscriber 001010000000001?" });
    expect(within(dialog).getByText(/10\.47\.0\.1\) of tenant acme is removed/)).toBeInTheDocument();
    expect(fake.calls.some((c) => c.method === "DELETE")).toBe(false);
    await user.click(within(dialog).getByRole("button", { name: "Delete subscriber" }));
    await waitFor(() =>
      expect(fake.calls.some((c) => c.method === "DELETE" && c.url.pathname === "/api/v1/subscribers/11")).toBe(true),
    );
  });
});

describe("parseTeids", () => {
  it("reads a list and explains what is wrong with a bad one", () => {
    expect(parseTeids("1, 2;3 ")).toEqual([1, 2, 3]);
    expect(parseTeids("")).toEqual([]);
    expect(parseTeids("0")).toBe("TEID 0 must be between 1 and 4294967295.");
    expect(parseTeids("4294967296")).toMatch(/between 1 and/);
    expect(parseTeids("5,5")).toBe("TEID 5 is listed twice.");
    expect(parseTeids("x1")).toBe("“x1” is not a whole number.");
  });

  it("bulk-deletes what the filter selects, after a confirmation naming the count and the filter", async () => {
    const fake = api({ "POST /api/v1/subscribers/bulk-delete": () => jsonResponse({ deleted: 1, filter: {} }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderPage("/subscribers?tenant_id=3&q=10.47");
    const user = userEvent.setup();
    await screen.findByRole("link", { name: "acme" });
    await user.click(await screen.findByRole("button", { name: "Delete 1 matching" }));
    const dialog = await screen.findByRole("dialog", { name: "Delete 1 subscriber?" });
    expect(dialog).toHaveTextContent(
      "All 1 subscriber of tenant acme whose IMSI or UE address contains “10.47” are removed",
    );
    expect(fake.calls.some((c) => c.method === "POST")).toBe(false);
    await user.click(within(dialog).getByRole("button", { name: "Delete 1 subscriber" }));
    await waitFor(() => expect(fake.calls.some((c) => c.method === "POST")).toBe(true));
    const body = JSON.parse(fake.calls.find((c) => c.method === "POST")?.body ?? "{}") as unknown;
    expect(body).toEqual({ q: "10.47", tenant_id: 3, all: false, expected_count: 1 });
  });

  it("says so when no filter is set, and sends all=true", async () => {
    const fake = api({ "POST /api/v1/subscribers/bulk-delete": () => jsonResponse({ deleted: 1, filter: {} }) });
    vi.stubGlobal("fetch", fake.fetch);
    renderPage("/subscribers");
    const user = userEvent.setup();
    await screen.findByRole("link", { name: "acme" });
    await user.click(await screen.findByRole("button", { name: "Delete 1 matching" }));
    const dialog = await screen.findByRole("dialog");
    expect(dialog).toHaveTextContent("of every tenant are removed — no filter is set: this empties the whole list");
    await user.click(within(dialog).getByRole("button", { name: "Delete 1 subscriber" }));
    await waitFor(() => expect(fake.calls.some((c) => c.method === "POST")).toBe(true));
    expect(JSON.parse(fake.calls.find((c) => c.method === "POST")?.body ?? "{}")).toMatchObject({ all: true });
  });
});
