// Whether the API answers at all. Any request that fails on the network (or gets a gateway's
// 502/503/504 page instead of a problem+json) asks for a health probe; while the probe fails the
// portal is "offline" and probes again with growing delays; when it answers, every query refetches.

export type Connectivity =
  { state: "online" } | { state: "offline"; since: number; nextProbeAt: number; attempts: number };

type Listener = (c: Connectivity) => void;

const HEALTH = "/api/v1/health";
const DELAYS_MS = [2000, 4000, 8000, 15000, 30000];

let current: Connectivity = { state: "online" };
let timer: number | undefined;
let probing = false;
const listeners = new Set<Listener>();
const reconnectListeners = new Set<() => void>();

function set(next: Connectivity): void {
  current = next;
  listeners.forEach((l) => l(current));
}

export function connectivity(): Connectivity {
  return current;
}

export function subscribeConnectivity(l: Listener): () => void {
  listeners.add(l);
  return () => listeners.delete(l);
}

/** Called once each time the API answers again after being unreachable. */
export function onReconnect(fn: () => void): () => void {
  reconnectListeners.add(fn);
  return () => reconnectListeners.delete(fn);
}

/** True when the answer came from the API (JSON), not from a proxy in front of a dead API. */
async function apiAnswers(): Promise<boolean> {
  try {
    const res = await fetch(HEALTH, { headers: { Accept: "application/json" }, cache: "no-store" });
    return (res.headers.get("content-type") ?? "").includes("json");
  } catch {
    return false;
  }
}

/** Probe now; schedules the next probe while offline. */
export async function probe(): Promise<boolean> {
  if (probing) return current.state === "online";
  probing = true;
  window.clearTimeout(timer);
  try {
    const ok = await apiAnswers();
    if (ok) {
      const wasOffline = current.state === "offline";
      set({ state: "online" });
      if (wasOffline) reconnectListeners.forEach((fn) => fn());
    } else {
      const attempts = current.state === "offline" ? current.attempts + 1 : 1;
      const delay = DELAYS_MS[Math.min(attempts - 1, DELAYS_MS.length - 1)] ?? 30000;
      const since = current.state === "offline" ? current.since : Date.now();
      set({ state: "offline", since, attempts, nextProbeAt: Date.now() + delay });
      timer = window.setTimeout(() => void probe(), delay);
    }
    return ok;
  } finally {
    probing = false;
  }
}

/** Does this failure mean the API may be unreachable (rather than refusing the request)? */
export function looksUnreachable(error: unknown): boolean {
  if (error instanceof TypeError) return true; // fetch's network failure
  const status = (error as { status?: unknown } | null)?.status;
  const title = (error as { title?: unknown } | null)?.title;
  // A gateway answering for a dead API sends no problem+json, so the problem has no real title.
  return (status === 502 || status === 503 || status === 504) && title === `HTTP ${status}`;
}

export function reportFailure(error: unknown): void {
  if (looksUnreachable(error) && !probing && current.state === "online") void probe();
}

/** Test hook: back to the initial state. */
export function resetConnectivity(): void {
  window.clearTimeout(timer);
  probing = false;
  current = { state: "online" };
}
