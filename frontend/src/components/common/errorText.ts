// A failure that is not an API problem (no problem+json answer) in words: the browser's own
// messages ("TypeError: Failed to fetch", "NetworkError when attempting to fetch resource.",
// "Load failed") all mean the request never reached the portal.

const NETWORK = /failed to fetch|networkerror|load failed|network request failed/i;

export const UNREACHABLE = "The portal cannot be reached; retrying…";

/** True for the browser's "the request got no answer" errors. */
export function isNetworkError(error: unknown): boolean {
  return error instanceof TypeError && NETWORK.test(error.message);
}

/** A title and a sentence for ``error``; never a class name like "TypeError:". */
export function errorText(error: unknown): { title: string; message: string } {
  if (isNetworkError(error)) return { title: "No connection", message: UNREACHABLE };
  if (error instanceof DOMException && error.name === "AbortError") {
    return { title: "Request cancelled", message: "The request was cancelled before the portal answered." };
  }
  const message = error instanceof Error ? error.message : String(error);
  return { title: "Something went wrong", message: message || "The portal gave no reason." };
}
