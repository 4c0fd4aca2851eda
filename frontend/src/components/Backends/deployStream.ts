// POST a deploy / rollback with Accept: application/x-ndjson and hand each progress event to the page.
import { authFetch, type Schemas } from "../../api/client";
import { ApiProblem, problemFrom } from "../../api/problem";

export interface ProgressEvent {
  event: "progress";
  phase: string;
  done: number;
  total: number;
  message: string;
}
export type Deployment = Schemas["DeploymentPublic"];

/** ``overrideReason``: an operator admits what admission control refused (Admission-Override header). */
export async function streamDeploy(
  url: string,
  body: unknown,
  onProgress: (e: ProgressEvent) => void,
  overrideReason?: string,
): Promise<Deployment> {
  const res = await authFetch(
    new Request(url, {
      method: "POST",
      headers: {
        Accept: "application/x-ndjson",
        "Content-Type": "application/json",
        ...(overrideReason === undefined ? {} : { "Admission-Override": overrideReason }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    }),
  );
  if (!res.ok || !res.body) throw problemFrom(res.status, await res.json().catch(() => null));
  const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
  let buffer = "";
  let result: Deployment | null = null;
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += value;
    let nl: number;
    while ((nl = buffer.indexOf("\n")) >= 0) {
      const line = buffer.slice(0, nl).trim();
      buffer = buffer.slice(nl + 1);
      if (!line) continue;
      const msg = JSON.parse(line) as { event: string } & Record<string, unknown>;
      if (msg.event === "progress") onProgress(msg as unknown as ProgressEvent);
      else if (msg.event === "result") result = msg as unknown as Deployment;
      else if (msg.event === "error") throw problemFrom(Number(msg.status) || 500, msg);
    }
  }
  if (!result) throw new ApiProblem(502, "Deploy ended without a result");
  return result;
}
