// The typed API client (generated types from openapi.json) and the token handling around it:
// every request carries the access token; a 401 refreshes once (rotating refresh token) and
// retries, otherwise the session ends and the app goes back to the login page.
// No token is ever written to storage a script could read back later: the short-lived access
// token lives in this module's memory only, and the refresh token is an HttpOnly cookie the
// browser sends to /api/v1/login/* by itself. A reload restores the session through it.
import createClient from "openapi-fetch";
import type { components, paths } from "./schema.gen";
import { ApiProblem, problemFrom } from "./problem";

export type Schemas = components["schemas"];

interface Tokens {
  access_token: string;
  // Accepted for compatibility with the login answer; never kept: the cookie holds it.
  refresh_token?: string | null;
}

let access: string | null = null;
const sessionListeners = new Set<() => void>();

export function setTokens(next: Tokens | null): void {
  access = next?.access_token ?? null;
  sessionListeners.forEach((fn) => fn());
}

export function hasSession(): boolean {
  return access !== null;
}

export function accessToken(): string | null {
  return access;
}

export function onSessionChange(fn: () => void): () => void {
  sessionListeners.add(fn);
  return () => sessionListeners.delete(fn);
}

// One refresh in flight at a time: refresh tokens rotate, so a second concurrent refresh
// with the same cookie would be taken for a stolen token and end the session.
let refreshing: Promise<boolean> | null = null;

/** A new access token from the refresh cookie; false when there is no live session. */
export async function refreshOnce(): Promise<boolean> {
  refreshing ??= (async () => {
    try {
      const res = await fetch("/api/v1/login/refresh", { method: "POST", credentials: "same-origin" });
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

/** End the session server-side (the cookie names it) and locally. */
export async function endSession(): Promise<void> {
  await fetch("/api/v1/login/logout", { method: "POST", credentials: "same-origin" }).catch(() => undefined);
  setTokens(null);
}

function withToken(req: Request): Request {
  const headers = new Headers(req.headers);
  if (access) headers.set("Authorization", `Bearer ${access}`);
  return new Request(req, { headers });
}

/** fetch with the bearer token, refreshing once on 401. Used by the generated client and raw calls. */
export async function authFetch(input: Request): Promise<Response> {
  const retry = input.clone();
  const res = await fetch(withToken(input));
  if (res.status !== 401 || !access || input.url.includes("/login/")) return res;
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
