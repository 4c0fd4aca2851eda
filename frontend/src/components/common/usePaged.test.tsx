import { describe, expect, it } from "vitest";
import { act, renderHook } from "@testing-library/react";
import type { ReactNode } from "react";
import { MemoryRouter, useLocation } from "react-router";
import { queryOf, usePageParams } from "./usePaged";

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
