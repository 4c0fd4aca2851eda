// Server-side paging state kept in the URL (?page=&q=&sort=), validated on read, and a list's
// other filters there (?state=, ?tenant_id= …).
import { useEffect, useState, type ChangeEvent } from "react";
import { useDebouncedValue } from "@mantine/hooks";
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

/**
 * A list's own filters in the URL beside the paging (?state=deployed): ``url`` to read them,
 * ``setFilter(key, value)`` to set one or, with an empty value, clear it; either starts again at page 1.
 */
export function useUrlFilters() {
  const [url, setUrl] = useSearchParams();
  const setFilter = (key: string, value: string | null) => {
    const next = new URLSearchParams(url);
    if (value) next.set(key, value);
    else next.delete(key);
    next.delete("page");
    setUrl(next, { replace: true });
  };
  return [url, setFilter] as const;
}

/**
 * A text field that types freely and hands its text to ``commit`` a quarter second after the last
 * key (one request per pause, not one per key), unless it equals ``committed``, the value in force.
 * Spread it into the field: ``<TextInput {...useDebouncedField(…)} />``.
 */
export function useDebouncedField(committed: string, commit: (text: string) => void) {
  const [text, setText] = useState(committed);
  const [debounced] = useDebouncedValue(text, 250);
  useEffect(() => {
    if (debounced !== committed) commit(debounced);
  }, [debounced]); // eslint-disable-line react-hooks/exhaustive-deps
  return { value: text, onChange: (e: ChangeEvent<HTMLInputElement>) => setText(e.currentTarget.value) };
}

/**
 * A paged table's props (``<DataTable {...tablePaging(params, setParams)} />``): its page, size and
 * sort, and what a press on a page or on a column's header changes (a new sort starts at page 1).
 */
export function tablePaging(params: PageParams, update: (next: Partial<PageParams>) => void) {
  return { params, onPage: (page: number) => update({ page }), onSort: (sort: string) => update({ sort, page: 1 }) };
}

/**
 * The value and change handler of a list's search field (``<TextInput {...searchField(…)} />``):
 * a new search starts again at page 1.
 */
export function searchField(params: PageParams, update: (next: Partial<PageParams>) => void) {
  return {
    value: params.q,
    onChange: (e: ChangeEvent<HTMLInputElement>) => update({ q: e.currentTarget.value, page: 1 }),
  };
}
