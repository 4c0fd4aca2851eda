import { describe, expect, it, vi } from "vitest";
import { act, renderHook } from "@testing-library/react";
import type { ChangeEvent, ReactNode } from "react";
import { MemoryRouter, useLocation } from "react-router";
import { queryOf, searchField, useDebouncedField, usePageParams, useUrlFilters } from "./usePaged";

function setup(url: string, defaults = { sort: "name" }) {
  const wrapper = ({ children }: { children: ReactNode }) => (
    <MemoryRouter initialEntries={[url]}>{children}</MemoryRouter>
  );
  return renderHook(() => ({ paged: usePageParams(defaults), location: useLocation() }), { wrapper });
}

describe("usePageParams", () => {
  it("reads page, search and sort from the URL", () => {
    const { result } = setup("/tenants?page=3&q=acme&sort=-vni");
    expect(result.current.paged[0]).toEqual({ page: 3, q: "acme", sort: "-vni", limit: 50 });
    expect(queryOf(result.current.paged[0])).toEqual({ offset: 100, limit: 50, sort: "-vni", q: "acme" });
  });

  it("falls back to defaults on garbage instead of sending it to the API", () => {
    const { result } = setup("/tenants?page=-2&sort=name;drop table");
    expect(result.current.paged[0]).toMatchObject({ page: 1, sort: "name", q: "" });
    expect(queryOf(result.current.paged[0])).toEqual({ offset: 0, limit: 50, sort: "name" });
  });

  it("writes changes back to the URL, keeping the page's other filters and omitting defaults", () => {
    const { result } = setup("/audit?action=deploy&page=4");
    act(() => result.current.paged[1]({ q: "alice", page: 1 }));
    const params = new URLSearchParams(result.current.location.search);
    expect(params.get("action")).toBe("deploy");
    expect(params.get("q")).toBe("alice");
    expect(params.has("page")).toBe(false);
    act(() => result.current.paged[1]({ sort: "-name" }));
    expect(new URLSearchParams(result.current.location.search).get("sort")).toBe("-name");
  });
});

const typed = (value: string) => ({ currentTarget: { value } }) as ChangeEvent<HTMLInputElement>;

describe("the list's other URL state", () => {
  it("a search field starts the list again at page 1", () => {
    const update = vi.fn();
    const field = searchField({ page: 3, q: "ac", sort: "name", limit: 50 }, update);
    expect(field.value).toBe("ac");
    field.onChange(typed("acme"));
    expect(update).toHaveBeenCalledWith({ q: "acme", page: 1 });
  });

  it("sets and clears a filter in the URL, back at page 1, keeping the others", () => {
    const wrapper = ({ children }: { children: ReactNode }) => (
      <MemoryRouter initialEntries={["/slices?q=red&page=3"]}>{children}</MemoryRouter>
    );
    const { result } = renderHook(() => ({ filters: useUrlFilters(), location: useLocation() }), { wrapper });
    act(() => result.current.filters[1]("state", "pending"));
    expect(result.current.filters[0].get("state")).toBe("pending");
    expect(result.current.location.search).toBe("?q=red&state=pending");
    act(() => result.current.filters[1]("state", null));
    expect(result.current.location.search).toBe("?q=red");
  });

  it("a debounced field commits once typing pauses, and not the value already in force", () => {
    vi.useFakeTimers();
    try {
      const commit = vi.fn();
      const { result } = renderHook(() => useDebouncedField("acme", commit));
      expect(result.current.value).toBe("acme");
      act(() => result.current.onChange(typed("acm")));
      act(() => result.current.onChange(typed("acme-2")));
      expect(result.current.value).toBe("acme-2");
      expect(commit).not.toHaveBeenCalled();
      act(() => vi.advanceTimersByTime(300));
      expect(commit).toHaveBeenCalledTimes(1);
      expect(commit).toHaveBeenCalledWith("acme-2");
    } finally {
      vi.useRealTimers();
    }
  });
});
