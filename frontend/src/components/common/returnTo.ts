// Deep links survive the login page: the guard remembers where the user was going, the start
// page (/home, where the login page sends everyone) goes there once.
const KEY = "sliceportal.returnTo";

/** Only same-site paths: never "//host" or a full URL (an open redirect). */
export function safePath(path: string | null | undefined): string | null {
  if (!path || !path.startsWith("/") || path.startsWith("//") || path.startsWith("/\\")) return null;
  if (path === "/home" || path.startsWith("/login")) return null;
  return path;
}

export function rememberReturnTo(path: string): void {
  const safe = safePath(path);
  if (safe && safe !== "/") sessionStorage.setItem(KEY, safe);
}

/** The remembered path, once: it is forgotten as it is read. */
export function takeReturnTo(): string | null {
  const path = safePath(sessionStorage.getItem(KEY));
  sessionStorage.removeItem(KEY);
  return path;
}
