// The router as users meet it: roles see only their pages, deep links survive the login page,
// the document title names the page, and an unreachable API shows a banner that retries.
import { afterEach, describe, expect, it, vi } from "vitest";
import { act, screen, waitFor } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { Route, Routes, useLocation } from "react-router";
import { setTokens } from "../api/client";
import { App } from "../App";
import { SessionProvider } from "../auth/session";
import { ErrorBoundary } from "../components/common/ErrorBoundary";
import { OfflineBanner } from "../components/common/OfflineBanner";
import { probe, reportFailure, resetConnectivity } from "../components/common/connectivity";
import { userMe } from "./fixtures";
import { fakeApi, jsonResponse, problemResponse, renderWithApp } from "./render";

const USERS = { tenant: userMe({ id: 2, username: "red", role: "tenant", tenant_id: 1 }), operator: userMe() };

function Where() {
  const l = useLocation();
  return <output data-testid="where">{l.pathname + l.search}</output>;
}

function renderApp(url: string) {
  return renderWithApp(
    <SessionProvider>
      <App />
      <Routes>
        <Route path="*" element={<Where />} />
      </Routes>
    </SessionProvider>,
    { url },
  );
}

function apiFor(role: keyof typeof USERS, extra: Parameters<typeof fakeApi>[0] = {}) {
  return fakeApi({
    "GET /api/v1/users/me": () => jsonResponse(USERS[role]),
    "GET /api/v1/openapi.json": () => jsonResponse({ paths: {} }),
    "GET /api/v1/slice-types": () => jsonResponse({ count: 0, data: [] }),
    "GET /api/v1/audit": () => jsonResponse({ count: 0, data: [] }),
    "POST /api/v1/login/access-token": () =>
      jsonResponse({ access_token: "a", refresh_token: "r", token_type: "bearer" }),
    ...extra,
  });
}

afterEach(() => {
  setTokens(null);
  resetConnectivity();
});

describe("roles", () => {
  it("a tenant does not see operator sections in the navigation", async () => {
    vi.stubGlobal("fetch", apiFor("tenant").fetch);
    setTokens({ access_token: "a", refresh_token: "r" });
    renderApp("/slice-types");
    const nav = await screen.findByRole("navigation", { name: "Main navigation" });
    const links = Array.from(nav.querySelectorAll("a")).map((a) => a.textContent);
    expect(links).toEqual(["SLA dashboard", "Slice types", "Slices"]);
  });

  it("a tenant opening an operator page by URL gets an explanation, not the page and a 403", async () => {
    const fake = apiFor("tenant");
    vi.stubGlobal("fetch", fake.fetch);
    setTokens({ access_token: "a", refresh_token: "r" });
    renderApp("/tenants");
    expect(await screen.findByRole("heading", { name: "Not available" })).toBeInTheDocument();
    expect(screen.getByText("Tenants is not part of your role’s portal.")).toBeInTheDocument();
    expect(fake.calls.some((c) => c.url.pathname === "/api/v1/tenants")).toBe(false);
    await waitFor(() => expect(document.title).toBe("Not available · sliceportal"));
  });
});

describe("deep links", () => {
  it("come back after the login page", async () => {
    vi.stubGlobal("fetch", apiFor("operator").fetch);
    renderApp("/audit?actor=alice");
    await screen.findByRole("heading", { name: /log in/ });
    expect(document.title).toBe("Log in · sliceportal");
    const user = userEvent.setup();
    await user.type(screen.getByRole("textbox", { name: "Username" }), "op");
    await user.type(screen.getByLabelText(/Password/), "secret-password");
    await user.click(screen.getByRole("button", { name: "Log in" }));
    await waitFor(() => expect(screen.getByTestId("where")).toHaveTextContent("/audit?actor=alice"));
    expect(await screen.findByRole("heading", { name: "Audit log" })).toBeInTheDocument();
    await waitFor(() => expect(document.title).toBe("Audit log · sliceportal"));
  });
});

describe("resilience", () => {
  it("a page that throws shows an explanation instead of a white page", () => {
    vi.spyOn(console, "error").mockImplementation(() => undefined);
    function Broken(): never {
      throw new Error("boom");
    }
    renderWithApp(
      <ErrorBoundary>
        <Broken />
      </ErrorBoundary>,
    );
    expect(screen.getByRole("alert")).toHaveTextContent("This page stopped working");
    expect(screen.getByRole("button", { name: "Reload" })).toBeInTheDocument();
  });

  it("an unreachable API shows a banner that retries and goes away when the API answers", async () => {
    let up = false;
    const fake = fakeApi({
      "GET /api/v1/health": () =>
        up
          ? jsonResponse({ status: "ok" })
          : new Response("Bad gateway", { status: 502, headers: { "Content-Type": "text/html" } }),
    });
    vi.stubGlobal("fetch", fake.fetch);
    renderWithApp(<OfflineBanner />);
    await act(async () => {
      reportFailure(new TypeError("Failed to fetch"));
      await Promise.resolve();
    });
    expect(await screen.findByTestId("offline-banner")).toHaveTextContent("The portal cannot reach the API");
    up = true;
    await act(async () => {
      await probe();
    });
    expect(screen.queryByTestId("offline-banner")).toBeNull();
  });

  it("a data-plane error (problem+json 502) is not mistaken for an unreachable API", async () => {
    const fake = fakeApi({ "GET /api/v1/health": () => problemResponse(500, "x", "y") });
    vi.stubGlobal("fetch", fake.fetch);
    const { ApiProblem } = await import("../api/problem");
    reportFailure(new ApiProblem(502, "Data plane error", "switch refused"));
    await new Promise((r) => setTimeout(r, 20));
    expect(fake.calls).toHaveLength(0);
  });
});
