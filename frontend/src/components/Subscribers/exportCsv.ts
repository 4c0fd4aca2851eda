// Export the subscribers a filter selects, in the import's own format (imsi,ue_ip,teids,tenant,
// slices with names, guaranteed_bps), so an exported file can be edited and imported again.
import { api, unwrap, type Schemas } from "../../api/client";

type Subscriber = Schemas["SubscriberPublic"];
export const EXPORT_HEADER = "imsi,ue_ip,teids,tenant,slices,guaranteed_bps";
const PAGE = 500; // the API's largest page

/** RFC 4180 field: quoted when it holds a comma, quote or line break. A cell a spreadsheet would
 * run as a formula (= + - @, tab, carriage return first: OWASP's CSV injection list) gets a `'`
 * in front, which spreadsheets show as text; the import drops that `'` again (subscriber_import.py). */
export function field(v: string): string {
  const safe = /^[=+\-@\t\r]/.test(v) ? `'${v}` : v;
  return /[",\r\n]/.test(safe) ? `"${safe.replace(/"/g, '""')}"` : safe;
}

export function toCsv(rows: Subscriber[], tenantName: Map<number, string>, sliceName: Map<number, string>): string {
  const lines = rows.map((s) =>
    [
      s.imsi,
      s.ue_ip,
      s.teids.join(";"),
      tenantName.get(s.tenant_id) ?? String(s.tenant_id),
      s.slice_ids.map((id) => sliceName.get(id) ?? String(id)).join(";"),
      s.guaranteed_bps != null ? String(s.guaranteed_bps) : "",
    ]
      .map(field)
      .join(","),
  );
  return `${[EXPORT_HEADER, ...lines].join("\r\n")}\r\n`;
}

/** Every subscriber the query selects, page by page (the list's paging and sort are ignored). */
export async function fetchAll(
  filter: { q?: string; tenant_id?: number; sort: string },
  onProgress?: (done: number, total: number) => void,
): Promise<Subscriber[]> {
  const out: Subscriber[] = [];
  for (let offset = 0; ; offset += PAGE) {
    const page = await unwrap(
      api.GET("/api/v1/subscribers", { params: { query: { ...filter, offset, limit: PAGE } } }),
    );
    out.push(...page.data);
    onProgress?.(out.length, page.count);
    if (page.data.length < PAGE || out.length >= page.count) return out;
  }
}

export function download(name: string, text: string): void {
  const url = URL.createObjectURL(new Blob([text], { type: "text/csv;charset=utf-8" }));
  const a = Object.assign(document.createElement("a"), { href: url, download: name });
  document.body.append(a);
  a.click();
  a.remove();
  URL.revokeObjectURL(url);
}
