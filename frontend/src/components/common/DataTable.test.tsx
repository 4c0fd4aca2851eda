import { describe, expect, it, vi } from "vitest";
import { screen, within } from "@testing-library/react";
import userEvent from "@testing-library/user-event";
import { keepPreviousData, useQuery } from "@tanstack/react-query";
import { useState } from "react";
import { renderWithApp } from "../../test/render";
import { ApiProblem } from "../../api/client";
import { ariaSort, DataTable, nextSort, RowActions, RowButton, type Column, type PageOf } from "./DataTable";
import type { PageParams } from "./usePaged";

interface Row {
  id: number;
  name: string;
}
const COLUMNS: Column<Row>[] = [
  { key: "id", header: "Number", cell: (r) => r.id, sortable: true },
  { key: "name", header: "Name", cell: (r) => r.name, sortable: true },
  { key: "actions", header: "Actions", cell: () => null, hiddenHeader: true, narrow: true },
];

/** A server of 45 rows, paged and sorted like the API; ``fail`` answers with a problem. */
function Harness({ fetchPage }: { fetchPage: (p: PageParams) => Promise<PageOf<Row>> }) {
  const [params, setParams] = useState<PageParams>({ page: 1, q: "", sort: "id", limit: 20 });
  const query = useQuery({
    queryKey: ["rows", params],
    queryFn: () => fetchPage(params),
    placeholderData: keepPreviousData,
  });
  return (
    <DataTable
      label="Things"
      columns={COLUMNS}
      rowKey={(r) => r.id}
      query={query}
      params={params}
      onPage={(page) => setParams({ ...params, page })}
      onSort={(sort) => setParams({ ...params, sort, page: 1 })}
      empty="Nothing here yet."
      alignTop
    />
  );
}

const ALL: Row[] = Array.from({ length: 45 }, (_, i) => ({
  id: i + 1,
  name: `thing ${String(45 - i).padStart(2, "0")}`,
}));
function server(p: PageParams): Promise<PageOf<Row>> {
  const key = p.sort.replace(/^-/, "") as keyof Row;
  const sorted = [...ALL].sort((a, b) => (a[key] < b[key] ? -1 : a[key] > b[key] ? 1 : 0));
  if (p.sort.startsWith("-")) sorted.reverse();
  const offset = (p.page - 1) * p.limit;
  return Promise.resolve({ count: ALL.length, data: sorted.slice(offset, offset + p.limit) });
}

const bodyRows = (table: HTMLElement) => within(table).getAllByRole("row").slice(1);

describe("DataTable", () => {
  it("sorts ascending, then descending, and names the direction", () => {
    expect(nextSort("name", "name")).toBe("-name");
    expect(nextSort("-name", "name")).toBe("name");
    expect(nextSort("-id", "name")).toBe("name");
    expect(ariaSort("-name", "name")).toBe("descending");
    expect(ariaSort("id", "name")).toBe("none");
  });

  it("shows one server page with the total, pages and sorts from the keyboard", async () => {
    const fetchPage = vi.fn(server);
    renderWithApp(<Harness fetchPage={fetchPage} />);
    const table = screen.getByRole("table", { name: "Things" });
    expect(within(table).getByRole("status", { name: "Loading" })).toBeInTheDocument();
    expect(await within(table).findByText("thing 45")).toBeInTheDocument();
    expect(within(table).getByText("thing 45").closest("td")).toHaveStyle({ verticalAlign: "top" });
    expect(bodyRows(table)).toHaveLength(20);
    expect(screen.getByTestId("row-count")).toHaveTextContent("45 rows");
    expect(within(table).getByRole("columnheader", { name: /Number/ })).toHaveAttribute("aria-sort", "ascending");
    // the actions column has a name for screen readers and no sort control
    expect(within(table).getByRole("columnheader", { name: "Actions" })).not.toHaveAttribute("aria-sort");
    expect(within(table).getByRole("columnheader", { name: "Actions" })).toHaveStyle({ width: "1px" }); // narrow

    const user = userEvent.setup();
    within(table).getByRole("button", { name: /Name/ }).focus();
    await user.keyboard("{Enter}");
    await vi.waitFor(() => expect(bodyRows(table)[0]).toHaveTextContent("thing 01"));
    expect(within(table).getByRole("columnheader", { name: /Name/ })).toHaveAttribute("aria-sort", "ascending");
    await user.keyboard(" ");
    await vi.waitFor(() => expect(bodyRows(table)[0]).toHaveTextContent("thing 45"));
    expect(within(table).getByRole("columnheader", { name: /Name/ })).toHaveAttribute("aria-sort", "descending");

    await user.click(screen.getByRole("button", { name: "Page 3" }));
    await vi.waitFor(() => expect(bodyRows(table)).toHaveLength(5));
    expect(fetchPage).toHaveBeenLastCalledWith({ page: 3, q: "", sort: "-name", limit: 20 });
  });

  it("says so when there are no rows", async () => {
    renderWithApp(<Harness fetchPage={() => Promise.resolve({ count: 0, data: [] })} />);
    const table = screen.getByRole("table", { name: "Things" });
    expect(await within(table).findByText("Nothing here yet.")).toBeInTheDocument();
    expect(screen.getByTestId("row-count")).toHaveTextContent("0 rows");
  });

  it("shows a failed load in words, not an empty table", async () => {
    const problem = new ApiProblem(503, "Service unavailable", "the database does not answer");
    renderWithApp(<Harness fetchPage={() => Promise.reject(problem)} />);
    expect(await screen.findByRole("alert")).toHaveTextContent("Service unavailable");
    expect(screen.queryByRole("table", { name: "Things" })).not.toBeInTheDocument();
  });

  it("shows a short list answered whole without a pager, its cells styled and its row buttons named", async () => {
    const onDelete = vi.fn();
    function Whole({ rows }: { rows: Row[] }) {
      const query = useQuery({ queryKey: ["whole", rows.length], queryFn: () => Promise.resolve(rows) });
      return (
        <DataTable
          label="Whole"
          query={query}
          rowKey={(r) => r.id}
          columns={[
            { key: "name", header: "Name", cell: (r) => r.name, td: { fw: 600 } },
            {
              key: "actions",
              header: "Actions",
              hiddenHeader: true,
              cell: (r) => (
                <RowActions>
                  <RowButton label={`Delete ${r.name}`} danger onClick={() => onDelete(r.id)}>
                    Delete
                  </RowButton>
                </RowActions>
              ),
            },
          ]}
        />
      );
    }
    const { unmount } = renderWithApp(<Whole rows={ALL.slice(0, 3)} />);
    const table = screen.getByRole("table", { name: "Whole" });
    const cell = await within(table).findByRole("cell", { name: "thing 45" });
    expect(bodyRows(table)).toHaveLength(3);
    expect(cell).toHaveStyle({ verticalAlign: "middle", fontWeight: "600" }); // as a table's cells stand by default
    expect(screen.queryByTestId("row-count")).not.toBeInTheDocument(); // no pager
    expect(within(table).getByRole("columnheader", { name: "Actions" })).not.toHaveAttribute("style");
    await userEvent.setup().click(within(table).getByRole("button", { name: "Delete thing 44" }));
    expect(onDelete).toHaveBeenCalledWith(2);
    unmount();

    // no rows and no words for that: the table stays empty, as a list that is seldom empty does
    renderWithApp(<Whole rows={[]} />);
    const empty = screen.getByRole("table", { name: "Whole" });
    await vi.waitFor(() => expect(empty).toHaveAttribute("aria-busy", "false"));
    expect(bodyRows(empty)).toHaveLength(0);
  });
});
