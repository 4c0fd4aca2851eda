// The one table every list of the portal uses: the server pages and sorts (the browser holds one
// page, whatever the total), and the table says in words when it loads, fails or has no rows.
// Sorting is a button in the column header (Tab + Enter/Space), announced through aria-sort.
import type { ReactNode } from "react";
import { Center, Loader, Table, Text, UnstyledButton } from "@mantine/core";
import type { UseQueryResult } from "@tanstack/react-query";
import { ApiProblem } from "../../api/client";
import { Pager } from "./Pager";
import { NotFound, ProblemAlert } from "./QueryView";
import type { PageParams } from "./usePaged";

export interface Column<T> {
  /** Stable id of the column; for a sortable column also the API's sort key. */
  key: string;
  header: ReactNode;
  cell: (row: T) => ReactNode;
  sortable?: boolean;
  /** Header hidden from sight (an actions column), still read by screen readers. */
  hiddenHeader?: boolean;
}

export interface PageOf<T> {
  data: T[];
  count: number;
}

export interface DataTableProps<T> {
  /** The table's accessible name. */
  label: string;
  columns: readonly Column<T>[];
  rowKey: (row: T) => string | number;
  query: UseQueryResult<PageOf<T>>;
  /** Current page, size and sort; ``onPage`` / ``onSort`` ask the caller (URL or state) for the next. */
  params: PageParams;
  onPage: (page: number) => void;
  onSort?: (sort: string) => void;
  /** Shown in the table when the answer has no rows (e.g. "No entries match these filters."). */
  empty: ReactNode;
  /** Below this width the table scrolls sideways instead of squeezing its columns. */
  minWidth?: number;
  /** Whether the pager shows when everything fits on one page (lists whose total matters: yes). */
  pagerWhenOnePage?: boolean;
  what?: string;
  rowProps?: (row: T) => Record<string, string | undefined>;
}

/** The next sort when a column's header is pressed: ascending first, then descending. */
export function nextSort(current: string, key: string): string {
  return current === key ? `-${key}` : key;
}

export function ariaSort(current: string, key: string): "ascending" | "descending" | "none" {
  return current === key ? "ascending" : current === `-${key}` ? "descending" : "none";
}

export function DataTable<T>({
  label,
  columns,
  rowKey,
  query,
  params,
  onPage,
  onSort,
  empty,
  minWidth = 0,
  pagerWhenOnePage = true,
  what,
  rowProps,
}: DataTableProps<T>) {
  if (query.isError && !query.data) {
    if (query.error instanceof ApiProblem && query.error.status === 404) return <NotFound what={what} />;
    return <ProblemAlert error={query.error} />;
  }
  const page = query.data;
  const stale = query.isPlaceholderData;
  const body = (() => {
    if (!page) {
      return (
        <Table.Tr>
          <Table.Td colSpan={columns.length}>
            <Center p="md">
              <Loader size="sm" role="status" aria-label="Loading" />
            </Center>
          </Table.Td>
        </Table.Tr>
      );
    }
    if (page.data.length === 0) {
      return (
        <Table.Tr>
          <Table.Td colSpan={columns.length}>
            <Text size="sm" c="dimmed">
              {empty}
            </Text>
          </Table.Td>
        </Table.Tr>
      );
    }
    return page.data.map((row) => (
      <Table.Tr key={rowKey(row)} {...rowProps?.(row)}>
        {/* top-aligned: a tall cell (an audit entry's changes) keeps its row's other cells beside its start */}
        {columns.map((c) => (
          <Table.Td key={c.key} style={{ verticalAlign: "top" }}>
            {c.cell(row)}
          </Table.Td>
        ))}
      </Table.Tr>
    ));
  })();
  const pages = page ? Math.ceil(page.count / params.limit) : 0;
  return (
    <>
      {query.isError && <ProblemAlert error={query.error} />}
      <Table.ScrollContainer minWidth={minWidth}>
        <Table striped aria-label={label} aria-busy={!page || stale} style={{ opacity: stale ? 0.6 : 1 }}>
          <Table.Thead>
            <Table.Tr>
              {columns.map((c) => (
                <Table.Th
                  key={c.key}
                  aria-sort={c.sortable && onSort ? ariaSort(params.sort, c.key) : undefined}
                  style={c.hiddenHeader ? { width: 1 } : undefined}>
                  {c.hiddenHeader ? (
                    <span style={VISUALLY_HIDDEN}>{c.header}</span>
                  ) : c.sortable && onSort ? (
                    <UnstyledButton onClick={() => onSort(nextSort(params.sort, c.key))} fw={600} fz="sm">
                      {c.header}
                      <span aria-hidden="true">
                        {params.sort === c.key ? " ▲" : params.sort === `-${c.key}` ? " ▼" : ""}
                      </span>
                    </UnstyledButton>
                  ) : (
                    c.header
                  )}
                </Table.Th>
              ))}
            </Table.Tr>
          </Table.Thead>
          <Table.Tbody>{body}</Table.Tbody>
        </Table>
      </Table.ScrollContainer>
      {page && (pagerWhenOnePage || pages > 1) && <Pager count={page.count} params={params} onPage={onPage} />}
    </>
  );
}

// Mantine's VisuallyHidden renders a div, which is not allowed inside a <th> in every reader.
const VISUALLY_HIDDEN = {
  position: "absolute",
  width: 1,
  height: 1,
  padding: 0,
  margin: -1,
  overflow: "hidden",
  clip: "rect(0, 0, 0, 0)",
  whiteSpace: "nowrap",
  border: 0,
} as const;
