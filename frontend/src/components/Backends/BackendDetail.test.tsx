import { describe, expect, it, vi } from "vitest";
import { screen, waitFor, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, Routes } from "react-router";
import { setTokens } from "../../api/client";
import { SessionProvider } from "../../auth/session";
import { admissionCheck, backendRow, userMe } from "../../test/fixtures";
import { fakeApi, jsonResponse, renderWithApp } from "../../test/render";
import { BackendDetail } from "./BackendDetail";

const BACKEND = backendRow();
const dep = (id: number, ruleSet: number, kind = "deploy", status = "succeeded") => ({
  id,
  backend_id: 4,
  rule_set_number: ruleSet,
  rule_set_id: ruleSet,
  kind,
  status,
  actor: "op",
  diff: {},
  duration_s: 0.1,
  error: null,
  created_at: "2026-11-23T09:00:00Z",
  finished_at: null,
  rolled_back: false,
  previous_rule_set_id: null,
  previous_rule_set_number: null,
});

type Counts = { added: number; removed: number; changed: number } & Record<string, unknown>;
const diffBody = (base: object, target: object, tables: Record<string, Counts>) => {
  const sum = (k: "added" | "removed" | "changed") => Object.values(tables).reduce((n, t) => n + t[k], 0);
  return {
    backend_id: 4,
    base,
    target,
    active_number: 2,
    identical: Object.keys(tables).length === 0,
    added: sum("added"),
    removed: sum("removed"),
    changed: sum("changed"),
    tables,
  };
};

function api() {
  return fakeApi({
    "GET /api/v1/backends/4": () => jsonResponse(BACKEND),
    "GET /api/v1/backends/4/preview": () =>
      jsonResponse({
        driver: "p4rt",
        rules_before: 1,
        rules_after: 2,
        flows: 1,
        paths: 1,
        lanes: 8,
        usage: {},
        tables: {},
      }),
    "GET /api/v1/backends/4/deployments": () =>
      jsonResponse({ count: 3, data: [dep(3, 2), dep(2, 2, "deploy", "failed"), dep(1, 1)] }),
    "GET /api/v1/backends/4/preview/diff": () =>
      jsonResponse(
        diffBody(
          { label: "rule set 2", number: 2, digest: "b", active: true },
          { label: "preview", number: null, digest: "c", active: false },
          {
            tcam: {
              added: 1,
              removed: 0,
              changed: 1,
              added_entries: [{ key: "0x0a2d0000", mask: "0xffff0000", action: { lane: 3 } }],
              removed_entries: [],
              changed_entries: [
                { before: { key: "k1", action: { lane: 0 } }, after: { key: "k1", action: { lane: 2 } } },
              ],
              truncated: false,
            },
          },
        ),
      ),
    "GET /api/v1/backends/4/rule-sets/2/diff": (_req, url) =>
      jsonResponse(
        diffBody(
          {
            label: `rule set ${url.searchParams.get("against")}`,
            number: Number(url.searchParams.get("against")),
            digest: "a",
            active: false,
          },
          { label: "rule set 2", number: 2, digest: "b", active: true },
          {},
        ),
      ),
    "POST /api/v1/backends/4/deployments": () =>
      new Response(
        `${JSON.stringify({ event: "progress", phase: "write", done: 1, total: 1, message: "" })}\n`
          + `${JSON.stringify({ event: "result", ...dep(4, 3) })}\n`,
        { headers: { "Content-Type": "application/x-ndjson" } },
      ),
    "POST /api/v1/backends/4/rollback": () =>
      new Response(`${JSON.stringify({ event: "result", ...dep(5, 1, "rollback") })}\n`, {
        headers: { "Content-Type": "application/x-ndjson" },
      }),
  });
}

// the session provider's own POST (restoring a session from the refresh cookie) is not the page's
const isLogin = (url: URL) => url.pathname.startsWith("/api/v1/login/");

function renderDetail() {
  return renderWithApp(
    <SessionProvider>
      <Routes>
        <Route path="/backends/:backendId" element={<BackendDetail />} />
      </Routes>
    </SessionProvider>,
    { url: "/backends/4" },
  );
}

describe("BackendDetail", () => {
  it("marks the active rule set and offers rollback only to other rule sets", async () => {
    vi.stubGlobal("fetch", api().fetch);
    renderDetail();
    expect(await screen.findByTestId("active-rule-set")).toHaveTextContent("Active rule set: 2");
    const history = screen.getByRole("table", { name: "Deployments" });
    await within(history).findByRole("button", { name: "Roll back to rule set 1" });
    expect(within(history).queryByRole("button", { name: "Roll back to rule set 2" })).toBeNull();
    expect(within(history).getAllByText("active")).toHaveLength(1);
  });

  it("deploys only after a confirmation naming the backend", async () => {
    const fake = api();
    vi.stubGlobal("fetch", fake.fetch);
    renderDetail();
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Deploy now" }));
    const dialog = await screen.findByRole("dialog", { name: "Deploy to backend edge-1?" });
    expect(fake.calls.some((c) => c.method === "POST" && !isLogin(c.url))).toBe(false);
    await user.click(within(dialog).getByRole("button", { name: "Deploy now" }));
    await waitFor(() => expect(screen.getByTestId("deploy-outcome")).toHaveTextContent("Deployment succeeded"));
    expect(fake.calls.filter((c) => c.method === "POST" && !isLogin(c.url)).map((c) => c.url.pathname)).toEqual([
      "/api/v1/backends/4/deployments",
    ]);
  });

  it("rolls back only after a confirmation naming backend and both rule sets", async () => {
    const fake = api();
    vi.stubGlobal("fetch", fake.fetch);
    renderDetail();
    const user = userEvent.setup();
    await user.click(await screen.findByRole("button", { name: "Roll back to rule set 1" }));
    const dialog = await screen.findByRole("dialog", { name: "Roll back backend edge-1 to rule set 1?" });
    expect(dialog).toHaveTextContent("replacing the active rule set 2");
    await user.click(within(dialog).getByRole("button", { name: "Cancel" }));
    expect(fake.calls.some((c) => c.method === "POST" && !isLogin(c.url))).toBe(false);
    await user.click(screen.getByRole("button", { name: "Roll back to rule set 1" }));
    await user.click(
      within(await screen.findByRole("dialog")).getByRole("button", { name: "Roll back to rule set 1" }),
    );
    await waitFor(() =>
      expect(fake.calls.some((c) => c.method === "POST" && c.url.pathname.endsWith("/rollback"))).toBe(true),
    );
    const body = fake.calls.find((c) => c.url.pathname.endsWith("/rollback"))?.body;
    expect(JSON.parse(body ?? "{}")).toEqual({ rule_set: 1 });
  });

  it("says a typed rule set is wrong instead of clamping it", async () => {
    vi.stubGlobal("fetch", api().fetch);
    renderDetail();
    const user = userEvent.setup();
    await screen.findByTestId("active-rule-set");
    const input = screen.getByRole("textbox", { name: "Rule set number to roll back to" });
    await user.type(input, "0");
    expect(screen.getByText("Rule set must be between 1 and 9007199254740991; 0 is out of range.")).toBeInTheDocument();
    await user.clear(input);
    await user.type(input, "7");
    expect(screen.getByText("Rule set 7 was never deployed here.")).toBeInTheDocument();
    expect(screen.getByRole("button", { name: "Roll back" })).toBeDisabled();
  });

  it("shows what a deploy would change, per table, with the changed members", async () => {
    vi.stubGlobal("fetch", api().fetch);
    renderDetail();
    const preview = await screen.findByTestId("preview-diff");
    expect(preview).toHaveTextContent("From rule set 2 (active) to preview:");
    expect(preview).toHaveTextContent("1 added, 0 removed, 1 changed");
    expect(within(preview).getByText("tcam", { exact: false })).toBeInTheDocument();
    expect(within(preview).getByRole("list", { name: "tcam: added entries" })).toHaveTextContent(
      '+ action={"lane":3}, key=0x0a2d0000, mask=0xffff0000',
    );
    const changed = within(preview).getByRole("list", { name: "tcam: changed entries" });
    expect(changed).toHaveTextContent('action: {"lane":0} → {"lane":2}');
    expect(changed).not.toHaveTextContent("key:");
  });

  it("compares the active rule set with an earlier one, both chosen from the history", async () => {
    const fake = api();
    vi.stubGlobal("fetch", fake.fetch);
    renderDetail();
    const diff = await screen.findByTestId("rule-set-diff");
    expect(diff).toHaveTextContent("From rule set 1 to rule set 2 (active):");
    expect(within(diff).getByText("no changes")).toBeInTheDocument();
    expect(screen.getByRole("combobox", { name: "To" })).toHaveValue("2");
    const call = fake.calls.find((c) => c.url.pathname.endsWith("/rule-sets/2/diff"));
    expect(call?.url.searchParams.get("against")).toBe("1");
  });

  it("offers an operator to deploy over admission's refusal with a reason, then shows the audit entry", async () => {
    const refusal = {
      type: "about:blank",
      title: "Admission refused",
      status: 409,
      instance: "/api/v1/backends/4/deployments",
      detail:
        "guaranteed rates on backend edge-1 (100 Mbit/s): 60 (a) + 50 (b) = 110 Mbit/s exceed the link's 100 Mbit/s",
      errors: [{ field: "sla.guaranteed_mbps", message: "… = 110 Mbit/s exceed the link's 100 Mbit/s" }],
      admission: [
        admissionCheck({
          guaranteed: {
            terms: [
              { slice_name: "a", guaranteed_bps: 60e6 },
              { slice_name: "b", guaranteed_bps: 50e6 },
            ],
            sum_bps: 110e6,
            limit_bps: 100e6,
            ok: false,
          },
        }),
      ],
    };
    const base = api();
    const fake = fakeApi({
      "GET /api/v1/users/me": () => jsonResponse(userMe()),
      "GET /api/v1/audit": () =>
        jsonResponse({
          count: 1,
          data: [
            {
              id: 90,
              ts: "2026-11-23T19:00:00Z",
              actor: "op",
              via: "session",
              action: "admission_override",
              object_type: "backend",
              object_id: 4,
              tenant_id: null,
              before: null,
              after: { reason: "link upgrade tonight", action: "deploy", refusals: [refusal.detail] },
            },
          ],
        }),
      "POST /api/v1/backends/4/deployments": (req) =>
        req.headers.get("Admission-Override") === null
          ? jsonResponse(refusal, 409, "application/problem+json")
          : new Response(`${JSON.stringify({ event: "result", ...dep(4, 3) })}\n`, {
              headers: { "Content-Type": "application/x-ndjson" },
            }),
    });
    vi.stubGlobal("fetch", async (input: RequestInfo | URL, init?: RequestInit) => {
      const req = input instanceof Request ? input : new Request(input, init);
      const path = `${req.method} ${new URL(req.url).pathname}`;
      return ["GET /api/v1/users/me", "GET /api/v1/audit", "POST /api/v1/backends/4/deployments"].includes(path)
        ? fake.fetch(req)
        : base.fetch(req);
    });
    setTokens({ access_token: "a", refresh_token: "r" });
    try {
      renderDetail();
      const user = userEvent.setup();
      await user.click(await screen.findByRole("button", { name: "Deploy now" }));
      await user.click(
        within(await screen.findByRole("dialog", { name: "Deploy to backend edge-1?" })).getByRole("button", {
          name: "Deploy now",
        }),
      );
      expect(await screen.findByTestId("admission-details")).toHaveTextContent(
        "60 Mbit/s (a) + 50 Mbit/s (b) = 110 Mbit/s of 100 Mbit/s",
      );
      await user.type(screen.getByRole("textbox", { name: "Reason for admitting it anyway" }), "link upgrade tonight");
      await user.click(screen.getByRole("button", { name: "Override with reason" }));
      await waitFor(() => expect(screen.getByTestId("deploy-outcome")).toHaveTextContent("Deployment succeeded"));
      expect(await screen.findByTestId("override-audit")).toHaveTextContent("Reason: link upgrade tonight");
      const posts = fake.calls.filter((c) => c.method === "POST");
      expect(posts).toHaveLength(2);
    } finally {
      setTokens(null);
    }
  });
});
