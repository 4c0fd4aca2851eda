// Render a component the way main.tsx mounts the app: Mantine, a fresh QueryClient (no retries,
// so an error answer shows at once) and a memory router at the given URL.
import type { ReactElement, ReactNode } from "react";
import { MantineProvider } from "@mantine/core";
import { QueryClient, QueryClientProvider } from "@tanstack/react-query";
import { render } from "@testing-library/react";
import { MemoryRouter } from "react-router";
import { setTokens } from "../api/client";
import { SessionProvider } from "../auth/session";

export function renderWithApp(ui: ReactElement, { url = "/" }: { url?: string } = {}) {
  const client = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  const Wrapper = ({ children }: { children: ReactNode }) => (
    <MantineProvider>
      <QueryClientProvider client={client}>
        <MemoryRouter initialEntries={[url]}>{children}</MemoryRouter>
      </QueryClientProvider>
    </MantineProvider>
  );
  return { client, ...render(ui, { wrapper: Wrapper }) };
}

/** ``ui`` as the app mounts a page: inside a signed-in session (its user from GET /api/v1/users/me). */
export function renderSignedIn(ui: ReactElement, options: { url?: string } = {}) {
  setTokens({ access_token: "a", refresh_token: "r" });
  return renderWithApp(<SessionProvider>{ui}</SessionProvider>, options);
}

/** A JSON Response as the API sends it. */
export function jsonResponse(body: unknown, status = 200, type = "application/json"): Response {
  return new Response(JSON.stringify(body), { status, headers: { "Content-Type": type } });
}

/** An RFC 9457 problem as the API sends it. */
export function problemResponse(
  status: number,
  title: string,
  detail: string,
  errors: { field: string; message: string; line?: number | null }[] = [],
): Response {
  return jsonResponse(
    { type: "about:blank", title, status, detail, instance: "", errors },
    status,
    "application/problem+json",
  );
}

/** The API as the tests see it: a route table answering fetch() by method and path. */
export type Route = (req: Request, url: URL) => Response | Promise<Response> | undefined;

export function fakeApi(routes: Record<string, Route>) {
  const calls: { method: string; url: URL; body: string }[] = [];
  const fetchImpl = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const req = input instanceof Request ? input : new Request(input, init);
    const url = new URL(req.url);
    calls.push({ method: req.method, url, body: req.method === "GET" ? "" : await req.clone().text() });
    const route = routes[`${req.method} ${url.pathname}`];
    const res = route ? await route(req, url) : undefined;
    return res ?? problemResponse(404, "Not found", `${req.method} ${url.pathname} is not in this test's API`);
  };
  return { fetch: fetchImpl, calls };
}
