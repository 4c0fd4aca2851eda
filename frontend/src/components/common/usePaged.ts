// Server-side paging state kept in the URL (?page=&q=&sort=), validated on read.
import { useSearchParams } from "react-router";

export interface PageParams {
  page: number;
  q: string;
  sort: string;
  limit: number;
}

export function usePageParams(defaults: { sort: string; limit?: number }) {
  const [params, setParams] = useSearchParams();
  const pageRaw = Number.parseInt(params.get("page") ?? "1", 10);
  const page = Number.isFinite(pageRaw) && pageRaw >= 1 ? pageRaw : 1;
  const q = (params.get("q") ?? "").slice(0, 200);
  const sortRaw = params.get("sort") ?? defaults.sort;
  const sort = /^-?[a-z_]{1,64}$/.test(sortRaw) ? sortRaw : defaults.sort;
  const limit = defaults.limit ?? 50;
  const value: PageParams = { page, q, sort, limit };
  const update = (next: Partial<PageParams>) => {
    const merged = { ...value, ...next };
    const out = new URLSearchParams(params); // other filters of the page (e.g. state) stay
    const put = (key: string, value: string, keep: boolean) => (keep ? out.set(key, value) : out.delete(key));
    put("page", String(merged.page), merged.page > 1);
    put("q", merged.q, merged.q !== "");
    put("sort", merged.sort, merged.sort !== defaults.sort);
    setParams(out, { replace: true });
  };
  return [value, update] as const;
}

export function queryOf(p: PageParams) {
  return { offset: (p.page - 1) * p.limit, limit: p.limit, sort: p.sort, ...(p.q ? { q: p.q } : {}) };
}
