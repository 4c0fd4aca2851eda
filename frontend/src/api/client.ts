// The typed API client (generated types from openapi.json) and the token handling around it:
// every request carries the access token; a 401 refreshes once (rotating refresh token) and
// retries, otherwise the session ends and the app goes back to the login page.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.gen";
import { ApiProblem, problemFrom } from "./problem";

export type Schemas = components["schemas"];

const TOKENS_KEY = "sliceportal.tokens";

interface Tokens {
  access_token: string;
  refresh_token: string;
}

function loadTokens(): Tokens | null {
  const raw = sessionStorage.getItem(TOKENS_KEY);
  if (!raw) return null;
  try {
    const parsed = JSON.parse(raw) as Partial<Tokens>;
    if (typeof parsed.access_token === "string" && typeof parsed.refresh_token === "string") {
      return { access_token: parsed.access_token, refresh_token: parsed.refresh_token };
    }
  } catch {
    // a corrupt entry is the same as none
  }
  return null;
}

let tokens: Tokens | null = loadTokens();
const sessionListeners = new Set<() => void>();

export function setTokens(next: Tokens | null): void {
  tokens = next;
  if (next) sessionStorage.setItem(TOKENS_KEY, JSON.stringify(next));
  else sessionStorage.removeItem(TOKENS_KEY);
  sessionListeners.forEach((fn) => fn());
}

export function hasSession(): boolean {
  return tokens !== null;
}

export function accessToken(): string | null {
  return tokens?.access_token ?? null;
}

export function onSessionChange(fn: () => void): () => void {
  sessionListeners.add(fn);
  return () => sessionListeners.delete(fn);
}

// One refresh in flight at a time: refresh tokens rotate, so a second concurrent refresh
// with the same token would fail and log the user out.
let refreshing: Promise<boolean> | null = null;

async function refreshOnce(): Promise<boolean> {
  const current = tokens;
  if (!current) return false;
  refreshing ??= (async () => {
    try {
      const res = await fetch("/api/v1/login/refresh", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ refresh_token: current.refresh_token }),
      });
      if (!res.ok) return false;
      setTokens((await res.json()) as Tokens);
      return true;
    } catch {
      return false;
    } finally {
      refreshing = null;
    }
  })();
  return refreshing;
}

function withToken(req: Request): Request {
  const headers = new Headers(req.headers);
  if (tokens) headers.set("Authorization", `Bearer ${tokens.access_token}`);
  return new Request(req, { headers });
}

/** fetch with the bearer token, refreshing once on 401. Used by the generated client and raw calls. */
export async function authFetch(input: Request): Promise<Response> {
  const retry = input.clone();
  const res = await fetch(withToken(input));
  if (res.status !== 401 || !tokens || input.url.includes("/login/")) return res;
  if (await refreshOnce()) return fetch(withToken(retry));
  setTokens(null);
  return res;
}

export const api = createClient<paths>({ baseUrl: "", fetch: authFetch });

/** Unwrap an openapi-fetch result: the data, or an ApiProblem thrown for the query cache. */
export async function unwrap<T>(call: Promise<{ data?: T; error?: unknown; response: Response }>): Promise<T> {
  const { data, error, response } = await call;
  if (!response.ok) throw problemFrom(response.status, error);
  return data as T;
}

export { ApiProblem };
